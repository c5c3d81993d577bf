"""The readout of the soft-certificate checker (trusted; see :mod:`attncert.kernel.soft.checker`):
when no LayerNorm follows the last attention, the logit is bounded by back-substitution
through the last feed-forward block — per-unit lines act(p) − s·p ∈ [m, M], the attention
outputs' linear functionals bounded by the weight-box LP and, in layer 1, the exact
fractional program — and its one-position change by the same lines or Lipschitz terms.
"""

from __future__ import annotations

import math

import numpy as np

from attncert.kernel.core import bounds as B
from attncert.kernel.soft import heads as P


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


def crown(model, layer, ctxs, u, u_o, changeable, r, lp, y_r, t_box, t_ch, valid):
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
            lo, hi = P._average(
                low[row : row + 1],
                up_w[row : row + 1],
                *P._hull(valid, *v),
                head.mask,
                lp,
                rows=[r],
            )
            lo, hi = lo[0], hi[0]
            if opt is not None:
                n_tok, _, d = opt["u"][0].shape
                vo = B.lin(
                    opt["u"][0].reshape(-1, d), opt["u"][1].reshape(-1, d), cm[0], None, cm[1]
                )
                vo = (vo[0].reshape(n_tok, kk, -1), vo[1].reshape(n_tok, kk, -1))
                e = P._exact(opt["q"], opt["k"], vo, valid, hd["beta"], head.mask, np.array([r]))
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
            ch = P._head_change(hp, up_w, head.mask, vis, (zero, zero), changeable, u_o, valid)[0]
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
