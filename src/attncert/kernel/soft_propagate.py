"""Bound propagation for the soft-certificate checker (trusted; see :mod:`attncert.kernel.soft`).

:func:`propagate` returns, for all completions of a restriction, the readout logit's
range and (when every free input position but the readout token may change) the bound
on its change under one changed position. The steps and the facts they rest on are
listed in :mod:`attncert.kernel.soft`'s docstring; the arithmetic is
:mod:`attncert.kernel.soft_bounds`.
"""

from __future__ import annotations

import math

import numpy as np
from flint import arb

from attncert.errors import SpecError
from attncert.kernel import soft_bounds as B
from attncert.model.positional import feature_matrix
from attncert.model.spec import Mask, Model

# ----------------------------------------------------------------------------- heads


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


def _head(head, ulo, uhi, beta):
    m, m_rad = B.matprod(head.w_o, head.w_v)
    bv = head.bias("b_v")[None]
    bias = B.lin(bv, bv, head.w_o, head.bias("b_o"))
    return {
        "q": B.lin(ulo, uhi, head.w_q, head.bias("b_q")),
        "k": B.lin(ulo, uhi, head.w_k, head.bias("b_k")),
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
    lo, hi = B.imul(
        *B.dots(*hd["q"], *hd["k"]), np.float64(hd["beta"][0]), np.float64(hd["beta"][1])
    )
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


# ----------------------------------------------------------------------------- propagation


def _options(model: Model, rho: str):
    sym = tuple(model.token_index[s] for s in model.alphabet)
    opts = [(model.token_index[model.bos],)] if model.bos is not None else []
    opts += [sym if c == "*" else (model.token_index[c],) for c in rho]
    if model.eos is not None:
        opts.append((model.token_index[model.eos],))
    return opts


def split_by_symbol(model: Model, r) -> bool:
    """Each readout symbol its own propagation iff the readout back-substitution applies."""
    return _crown_ok(model, r)


def readout_index(model: Model, n: int):
    return None if model.readout.pooled else model.readout.index(model.n_tokens(n))


def _jac(ffn, pre, residual):
    """J⁺ ≥ |[I +] W₂ diag(s) W₁| for every slope s of act over the pre-activation rows:
    |fl(W₂ (s_mid ⊙ W₁))|(1 + 4u) + |W₂| diag(s_rad + g|s_mid|) |W₁| (1 + g)."""
    sl, sh = B.act_slopes(ffn.activation.value, *pre)
    sm = 0.5 * sl + 0.5 * sh
    sr = np.maximum(B.up(sh - sm), B.up(sm - sl))
    g = B.g2(ffn.w1.shape[0] + 1)
    jm = np.einsum("ik,rkj->rij", ffn.w2, sm[:, :, None] * ffn.w1)
    if residual:
        jm = jm + np.eye(ffn.w1.shape[1])[None]
    err = np.einsum(
        "ik,rkj->rij", np.abs(ffn.w2), B.up(sr + B.up(g * np.abs(sm)))[:, :, None] * np.abs(ffn.w1)
    )
    return B.up(B.up(np.abs(jm) * (1.0 + 2.0**-51)) + B.up(err * (1.0 + g) + 2.0**-1000))


def _japply(jp, v):
    return B.up(np.einsum("rij,rj->ri", jp, v) * (1.0 + B.g2(v.shape[-1])) + 2.0**-1000)


def _ffn(ffn, valid, box, other, selfc, residual):
    """FFN (plus its input when ``residual``) on rows: the plain interval map ∩ the centred
    form f(c) ± J⁺r; changes through J⁺ (rows) and J⁺ of each position's hull (self)."""
    kind = ffn.activation.value
    pre = B.lin(*box, ffn.w1, ffn.b1)
    plain = B.lin(*B.act_box(kind, *pre), ffn.w2, ffn.b2)
    c, rad = B.centre(*box)
    f_c = B.lin(*B.act_box(kind, *B.lin(c, c, ffn.w1, ffn.b1)), ffn.w2, ffn.b2)
    if residual:
        plain, f_c = B.iadd(*box, *plain), B.iadd(c, c, *f_c)
    jp = _jac(ffn, pre, residual)
    wid = _japply(jp, rad)
    out = np.maximum(plain[0], B.dn(f_c[0] - wid)), np.minimum(plain[1], B.up(f_c[1] + wid))
    B.finite(*out)
    jp_pos = _jac(ffn, B.lin(*_hull(valid, *box), ffn.w1, ffn.b1), residual)
    return out, _japply(jp, other), _japply(jp_pos, selfc)


def _norm(norm, valid, box, other, selfc=None):
    """LayerNorm on rows; the changed position's own change through each position's hull."""
    lo, hi, s_max, n_abs, _ = B.layernorm(norm, *box)
    out_o = B.layernorm_change(norm, other, s_max, n_abs)
    if selfc is None:
        return (lo, hi), out_o, None
    _, _, s_p, n_p, _ = B.layernorm(norm, *_hull(valid, *box))
    return (lo, hi), out_o, B.layernorm_change(norm, selfc, s_p, n_p)


def _crown_ok(model: Model, r) -> bool:
    if r is None or not model.layers or model.final_norm is not None:
        return False
    last = model.layers[-1]
    if not last.pre_norm and (last.norm1 is not None or last.norm2 is not None):
        return False
    return not (last.pre_norm and last.norm2 is not None and last.ffn is not None)


def propagate(model: Model, rho: str, changeable_all: bool, lp: bool = True):
    """(z_lo, z_hi, change) of the readout over all completions of ``rho``; with
    ``changeable_all`` every free input position but the readout token may change."""
    for layer in model.layers:
        for h in layer.heads:
            if h.kind.is_hard:
                raise SpecError("the soft certificate checker handles softmax heads only")
    n = len(rho)
    opts = _options(model, rho)
    n_tok, d = len(opts), model.d
    r = readout_index(model, n)
    off = model.input_offset()
    changeable = np.zeros(n_tok, dtype=bool)
    if changeable_all:
        changeable[off : off + n] = np.array([c == "*" for c in rho])
        if r is not None:
            changeable[r] = False
    emb = model.embedding
    pos = np.zeros((n_tok, d)), np.zeros((n_tok, d))
    if emb.features:
        phi = feature_matrix(emb.features, n_tok)
        pos = B.lin(phi, phi, emb.pos_weight)
    if emb.table is not None:
        if n_tok > emb.table.shape[0]:
            raise SpecError(f"{n_tok} tokens exceed the learned position table")
        pos = B.iadd(*pos, emb.table[:n_tok], emb.table[:n_tok])
    kk = max(len(o) for o in opts)
    valid = np.array([[i < len(o) for i in range(kk)] for o in opts])
    ids = np.array([[o[min(i, len(o) - 1)] for i in range(kk)] for o in opts])
    y_opt = B.iadd(emb.word[ids], emb.word[ids], pos[0][:, None], pos[1][:, None])
    rows_pos = np.repeat(np.arange(n_tok), kk)  # rows: (position, allowed token)
    box = (y_opt[0].reshape(-1, d), y_opt[1].reshape(-1, d))
    other = np.zeros((n_tok * kk, d))
    h_lo, h_hi = _hull(valid, *box)
    selfc = np.where(changeable[:, None], B.up(h_hi - h_lo), 0.0)
    crown = _crown_ok(model, r) and valid[r].sum() == 1
    r_rows = None if r is None else np.nonzero(rows_pos == r)[0][valid[r]]
    result = None
    for li, layer in enumerate(model.layers):
        last = li == len(model.layers) - 1
        pre = layer.pre_norm
        if pre and layer.norm1 is not None:
            u, u_o, _ = _norm(layer.norm1, valid, box, other)
        else:
            u, u_o = box, other
        queries = None
        if li == 0 and layer.heads:
            if len(model.layers) == 1 and r is not None:
                queries = np.array([r])
            elif n_tok * n_tok * kk * kk * d <= 1 << 20:
                queries = np.arange(n_tok)
        att = (np.zeros((n_tok * kk, d)), np.zeros((n_tok * kk, d)))
        att_o, att_s = np.zeros((n_tok * kk, d)), np.zeros((n_tok, d))
        ctxs = []
        for head in layer.heads:
            beta = _beta(head, n_tok)
            hd = _head(head, *u, beta)
            vis = head.mask.matrix(n_tok)
            low, up_w = _weights(*_scores(hd, valid), vis[rows_pos])
            v_key = _hull(valid, *hd["v"])
            lo_, hi_ = (
                _reduce(v_key[0], head.mask, "min")[rows_pos],
                _reduce(v_key[1], head.mask, "max")[rows_pos],
            )
            if lp:
                sel = np.nonzero(up_w.max(axis=1) < 1.0 - 2.0**-10)[0]
                if len(sel):
                    hi_[sel] = np.minimum(hi_[sel], _dual(low[sel], up_w[sel], v_key[1]))
                    lo_[sel] = np.maximum(lo_[sel], -_dual(low[sel], up_w[sel], -v_key[0]))
            none = ~vis.any(axis=1)[rows_pos]
            out = B.iadd(
                np.where(none[:, None], 0.0, lo_), np.where(none[:, None], 0.0, hi_), *hd["bias"]
            )
            out = (
                np.where(none[:, None], hd["b_o"], out[0]),
                np.where(none[:, None], hd["b_o"], out[1]),
            )
            opt = None
            if li == 0 and (queries is not None or (last and crown)):
                ho = _head(head, *u, beta)
                opt = {
                    key: (ho[key][0].reshape(n_tok, kk, -1), ho[key][1].reshape(n_tok, kk, -1))
                    for key in ("q", "k", "v")
                }
                opt["valid"], opt["u"] = (
                    valid,
                    (u[0].reshape(n_tok, kk, d), u[1].reshape(n_tok, kk, d)),
                )
            if queries is not None:
                e_lo, e_hi = _exact(opt["q"], opt["k"], opt["v"], valid, beta, head.mask, queries)
                seen = np.isfinite(e_lo) & np.isfinite(e_hi)  # before rounding (no key: ±inf)
                e_lo, e_hi = B.iadd(
                    np.where(seen, e_lo, 0.0), np.where(seen, e_hi, 0.0), *hd["bias"]
                )
                o_lo, o_hi = (
                    out[0].reshape(n_tok, kk, d).copy(),
                    out[1].reshape(n_tok, kk, d).copy(),
                )
                o_lo[queries] = np.where(seen, np.maximum(o_lo[queries], e_lo), o_lo[queries])
                o_hi[queries] = np.where(seen, np.minimum(o_hi[queries], e_hi), o_hi[queries])
                out = (o_lo.reshape(-1, d), o_hi.reshape(-1, d))
            ch_o, ch_s, _ = _head_change(hd, up_w, head.mask, vis, out, changeable, u_o, valid)
            if last and crown:
                ctxs.append((head, hd, low, up_w, vis, opt))
            att = B.iadd(*att, *out)
            att_o, att_s = B.up(att_o + ch_o), B.up(att_s + ch_s)
        y_r = (
            (box[0][r_rows].min(0), box[1][r_rows].max(0), other[r_rows].max(0))
            if last and crown
            else None
        )
        if layer.residual:
            box, other, selfc = B.iadd(*box, *att), B.up(other + att_o), B.up(selfc + att_s)
        else:
            box, other, selfc = att, att_o, att_s
        if last and crown:
            t_r = (box[0][r_rows].min(0), box[1][r_rows].max(0))
            result = _crown(
                model, layer, ctxs, u, u_o, changeable, r, lp, y_r, t_r, other[r_rows].max(0), valid
            )
        if not pre and layer.norm1 is not None:
            box, other, selfc = _norm(layer.norm1, valid, box, other, selfc)
        if layer.ffn is not None:
            same = layer.residual and not (pre and layer.norm2 is not None)
            if pre and layer.norm2 is not None:
                f_in, f_o, f_s = _norm(layer.norm2, valid, box, other, selfc)
            else:
                f_in, f_o, f_s = box, other, selfc
            f_box, f_o, f_s = _ffn(layer.ffn, valid, f_in, f_o, f_s, same)
            if layer.residual and not same:
                box, other, selfc = B.iadd(*box, *f_box), B.up(other + f_o), B.up(selfc + f_s)
            else:
                box, other, selfc = f_box, f_o, f_s
        if not pre and layer.norm2 is not None:
            box, other, selfc = _norm(layer.norm2, valid, box, other, selfc)
    if model.final_norm is not None:
        box, other, selfc = _norm(model.final_norm, valid, box, other, selfc)
    if r is None:  # mean readout: the mean of every position's hull
        p_lo, p_hi = _hull(valid, *box)
        f_lo, f_hi = B.dn(B.sum_dn(p_lo, axis=0) / n_tok), B.up(B.sum_up(p_hi, axis=0) / n_tok)
        worst = selfc[changeable].max(axis=0) if changeable.any() else np.zeros(d)
        f_ch = B.up(B.up(B.psum_up(_pmax(valid, other), axis=0) + worst) / n_tok)
    else:
        f_lo, f_hi, f_ch = box[0][r_rows].min(0), box[1][r_rows].max(0), other[r_rows].max(0)
    w = model.readout.weight
    z = B.lin(f_lo[None], f_hi[None], w[None], np.array([model.readout.bias]))
    z_lo, z_hi = float(z[0][0, 0]), float(z[1][0, 0])
    last = model.layers[-1] if model.layers else None
    norm = model.final_norm
    if norm is None and last is not None and not last.pre_norm:
        norm = last.norm2 if last.norm2 is not None else (last.norm1 if last.ffn is None else None)
    if norm is not None:  # the readout reads a LayerNorm output: Σn = 0, ‖n‖² < d
        s_lo, s_hi = B.sphere(norm, w, model.readout.bias)
        z_lo, z_hi = max(z_lo, s_lo), min(z_hi, s_hi)
    change = float(B.pmat_up(f_ch[None], np.abs(w)[:, None])[0, 0])
    if result is not None:
        z_lo, z_hi, change = max(z_lo, result[0]), min(z_hi, result[1]), min(change, result[2])
    if not changeable.any():
        change = 0.0
    per_row = []  # the readout position's tokens one by one (when it is free)
    if r is not None and result is None and len(r_rows) > 1:
        for k, rw in zip(np.nonzero(valid[r])[0], r_rows, strict=True):
            zz = B.lin(box[0][rw][None], box[1][rw][None], w[None], np.array([model.readout.bias]))
            zl, zh = float(zz[0][0, 0]), float(zz[1][0, 0])
            if norm is not None:
                zl, zh = max(zl, s_lo), min(zh, s_hi)
            ch = (
                float(B.pmat_up(other[rw][None], np.abs(w)[:, None])[0, 0])
                if changeable.any()
                else 0.0
            )
            per_row.append((int(k), zl, zh, ch, B.absmax(box[0][rw], box[1][rw])))
    return z_lo, z_hi, change, B.absmax(f_lo, f_hi), per_row


# ----------------------------------------------------------------------------- readout


def _offsets(kind: str, s, lo, hi):
    """[m, M] ⊇ {act(p) − s·p : p ∈ [lo, hi]}: ReLU is convex (extremes at the ends or
    the kink); otherwise g′ ∈ [s_min − s, s_max − s] bounds the excess over the ends by
    (hi − lo)·D₁D₂/(D₁ + D₂)."""
    fl, fh = B.act_point(kind, lo), B.act_point(kind, hi)
    gl = B.dn(fl[0] - B.up(s * lo)), B.up(fl[1] - B.dn(s * lo))
    gh = B.dn(fh[0] - B.up(s * hi)), B.up(fh[1] - B.dn(s * hi))
    top, bot = np.maximum(gl[1], gh[1]), np.minimum(gl[0], gh[0])
    if kind == "relu":
        return np.where((lo < 0) & (hi > 0), np.minimum(bot, 0.0), bot), top
    sl, sh = B.act_slopes(kind, lo, hi)
    d1, d2 = np.maximum(B.up(sh - s), 0.0), np.maximum(B.up(s - sl), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bump = np.where(d1 + d2 > 0, B.up(B.up(B.up(hi - lo) * B.up(d1 * d2)) / B.dn(d1 + d2)), 0.0)
    return B.dn(bot - bump), B.up(top + bump)


def _chord(kind: str, lo, hi):
    if kind == "relu":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((lo < 0) & (hi > 0), hi / (hi - lo), np.where(lo >= 0, 1.0, 0.0))
    fl, fh = B.act_point(kind, lo), B.act_point(kind, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(hi > lo, (0.5 * (fh[0] + fh[1]) - 0.5 * (fl[0] + fl[1])) / (hi - lo), 0.0)
    return np.where(np.isfinite(s), s, 0.0)


def _mid(lo, hi):
    c = 0.5 * lo + 0.5 * hi
    return c, np.maximum(B.up(hi - c), B.up(c - lo))


def _crown(model, layer, ctxs, u, u_o, changeable, r, lp, y_r, t_box, t_ch, valid):
    """(z_lo, z_hi, change) by back-substitution through the last FFN (module docstring);
    the readout position r carries one token (a single row)."""
    kk = valid.shape[1]
    opt_r = int(np.argmax(valid[r]))
    row = r * kk + opt_r

    def project(head, hd, c):
        p = B.matprod(c, head.w_o)
        cm = B.matprod_r(*p, head.w_v)
        v = B.lin(*u, cm[0], None, cm[1])
        bias = B.lin(hd["bias"][0][None], hd["bias"][1][None], c)
        b_o = B.lin(hd["b_o"][None], hd["b_o"][None], c)
        return v, (bias[0][0], bias[1][0]), (b_o[0][0], b_o[1][0]), cm

    def o_range(c):
        tot = np.zeros(len(c)), np.zeros(len(c))
        for head, hd, low, up_w, vis, opt in ctxs:
            v, bias, b_o, cm = project(head, hd, c)
            if not vis[r].any():
                tot = B.iadd(*tot, *b_o)
                continue
            lo, hi = _average(
                low[row : row + 1], up_w[row : row + 1], *_hull(valid, *v), head.mask, lp, rows=[r]
            )
            lo, hi = lo[0], hi[0]
            if opt is not None:
                n_tok, _, d = opt["u"][0].shape
                vo = B.lin(
                    opt["u"][0].reshape(-1, d), opt["u"][1].reshape(-1, d), cm[0], None, cm[1]
                )
                vo = (vo[0].reshape(n_tok, kk, -1), vo[1].reshape(n_tok, kk, -1))
                e = _exact(opt["q"], opt["k"], vo, valid, hd["beta"], head.mask, np.array([r]))
                e_lo, e_hi = e[0][0, opt_r], e[1][0, opt_r]
                lo = np.where(np.isfinite(e_lo), np.maximum(lo, e_lo), lo)
                hi = np.where(np.isfinite(e_hi), np.minimum(hi, e_hi), hi)
            tot = B.iadd(*tot, *B.iadd(lo, hi, *bias))
        return tot

    def o_change(c):
        tot = np.zeros(len(c))
        for head, hd, _, up_w, vis, _ in ctxs:
            v, bias, _, cm = project(head, hd, c)
            hp = dict(hd, v=v, bias=bias, mabs=B.up(np.abs(cm[0]) + cm[1]))
            zero = np.zeros((len(valid.ravel()), len(c)))
            ch = _head_change(hp, up_w, head.mask, vis, (zero, zero), changeable, u_o, valid)[0]
            tot = B.up(tot + ch[row])
        return tot

    w, b = model.readout.weight, np.array([model.readout.bias])
    res = 1.0 if layer.residual else 0.0
    yb, yc = (y_r[0] * res, y_r[1] * res), y_r[2] * res

    def l_range(a):
        y = B.lin(yb[0][None], yb[1][None], a)
        return B.iadd(y[0][0], y[1][0], *o_range(a))

    def l_change(a):
        return B.up(B.pmat_up(yc[None], np.abs(a).T)[0] + o_change(a))

    ffn = layer.ffn
    if ffn is None:
        lo, hi = B.iadd(*l_range(w[None]), b, b)
        return float(lo[0]), float(hi[0]), float(l_change(w[None])[0])
    kind = ffn.activation.value
    t_abs = B.absmax(*t_box)
    p_lo, p_hi = B.iadd(*l_range(ffn.w1), ffn.b1, ffn.b1)
    pb = B.lin(t_box[0][None], t_box[1][None], ffn.w1, ffn.b1)
    p_lo, p_hi = np.maximum(p_lo, pb[0][0]), np.minimum(p_hi, pb[1][0])
    cb = B.lin(w[None], w[None], ffn.w2.T)
    c, c_err = _mid(cb[0][0], cb[1][0])
    act_abs = B.absmax(*B.act_box(kind, p_lo, p_hi))
    const = B.lin(ffn.b2[None], ffn.b2[None], w[None], b)
    c_err_term = float(B.pmat_up(c_err[None], act_abs[:, None])[0, 0])

    def fold(cs, sign):
        a = B.lin(cs[None], cs[None], ffn.w1.T, sign * w)
        return _mid(a[0][0], a[1][0])

    def side(sign, slopes):
        cc = sign * c
        g_lo, g_hi = _offsets(kind, slopes, p_lo, p_hi)
        cs = cc * slopes
        a, a_err = fold(cs, sign)
        t_hi = l_range(a[None])[1][0]
        err_t = float(B.pmat_up(a_err[None], t_abs[:, None])[0, 0])
        cbias = B.lin(cs[None], cs[None], ffn.b1[None])[1][0, 0]
        g = B.sum_up(np.where(cc >= 0, B.up(cc * g_hi), B.up(cc * g_lo)))
        k = const[1][0, 0] if sign > 0 else -const[0][0, 0]
        return float(B.up(t_hi + cbias + g + k + c_err_term + err_t))

    s = _chord(kind, p_lo, p_hi)
    cands = [s]
    if kind == "relu":
        unst = (p_lo < 0) & (p_hi > 0)
        cands += [
            np.where(unst, (p_hi > -p_lo).astype(float), s),
            np.where(unst, 0.0, s),
            np.where(unst, 1.0, s),
        ]
    z_hi = min(side(1.0, np.where(c >= 0, s, x)) for x in cands)
    z_lo = -min(side(-1.0, np.where(-c >= 0, s, x)) for x in cands)
    g_lo, g_hi = _offsets(kind, s, p_lo, p_hi)
    dp = l_change(ffn.w1)
    sl, sh = B.act_slopes(kind, p_lo, p_hi)
    slope = B.absmax(sl, sh)
    dev = np.maximum(B.up(sh - s), B.up(s - sl))
    lip = B.up(B.up(np.abs(c) * slope) * dp)
    gap = B.up(np.abs(c) * np.minimum(B.up(g_hi - g_lo), B.up(dev * dp)))
    c_err_ch = float(B.pmat_up(c_err[None], B.up(slope * dp)[:, None])[0, 0])
    mixed = B.up(gap + B.up(np.abs(c * s) * dp)) < lip
    change = math.inf
    for keep in (np.ones_like(mixed), np.zeros_like(mixed), mixed):
        a2, a2_err = fold(np.where(keep, c * s, 0.0), 1.0)
        dt = float(B.pmat_up(a2_err[None], t_ch[:, None])[0, 0])
        total = B.up(l_change(a2[None])[0] + B.sum_up(np.where(keep, gap, lip)) + dt + c_err_ch)
        change = min(change, float(total))
    B.finite(np.array([z_lo, z_hi, change]))
    return z_lo, z_hi, change
