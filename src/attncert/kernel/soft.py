"""The independent checker of soft certificates (trusted; issue 15).

``check(cert, model)`` re-derives every number of an ``attncert-soft-certificate`` from
the model and the certificate, with its own code (imports: numpy, python-flint,
:mod:`attncert.errors`, :mod:`attncert.io`, the model loader, and
:mod:`attncert.kernel.soft_bounds`), and accepts only if every claim holds:

1. **identity** — the model's content hash and n are the certificate's;
2. **sensitivity** — for every readout symbol, an outward-rounded bound propagation over
   all strings of length n re-derives the logit's range [z_lo, z_hi] and the
   one-position change bound; the claims must be sound (range ⊇ re-derived, change ≥
   re-derived) and ``bound`` ≥ max_σ min(z_hi − z_lo, change);
3. **floor** — Theorem 6's floor ≤ log(1 + e^{−B/2}) (arb), for PARITY, or
   ≤ (1 − p)·P(U_n)·log(1 + e^{−B/2}) for the 2-Dyck bracket-type sub-task (P(U_n) by a
   height DP in arb);
4. **restriction** — the same propagation over all completions of ρ re-derives a
   logit range that excludes 0 on the side of the claimed decision;
5. **pair** — two completions of ρ that differ in membership, whose logits, evaluated
   in arb at the recorded precision, are exactly the recorded balls and both have the
   decision's sign (an undecided sign is refused).

Besides soundness, every claimed number must be within the certificate's relative
``tolerance`` of what is re-derived (this detects edited files; soundness never uses
it).

The propagation (per token position: a box over all inputs, a bound on the change when
another position changes, and one when the position itself changes):

* layer 0 exactly per allowed token; LayerNorm with the variance lower bound
  mean_k dist(0, C_k)² over the box (C_k the exact range of the centred coordinate),
  Lipschitz constant 1/√(var_lo + ε) (:mod:`attncert.kernel.soft_bounds`);
* a softmax head at query j: score intervals s_jw = β q_j·k_w; a key's weight lies in
  [L_w/(L_w + Σ_{v≠w} U_v), U_w/(U_w + Σ_{v≠w} L_v)] (L ≤ e^{lo − m} ≤ e^{hi − m} ≤ U);
  the output range is the hull of the visible values ∩ the weight-box LP bounded by
  weak duality, t + Σ u(h − t)⁺ − Σ l(t − h)⁺ at 32 candidate t; in layer 1 the exact
  fractional program (Dinkelbach, certified by F(λ⁺) ≤ 0). The change at j ≠ i is
  max_i u_ji·max(v_hi,i − M_lo, M_hi − v_lo,i) + max_w Δṽ_w + min(1, 2ε_j)·width_j with
  ε_j = β(Δq_j·max|k| + max|q_j|·max Δk); at j = i the width of j's output range;
* feed-forward layers: interval maps, act′ enclosures for the change;
* at the readout (no LayerNorm after the last attention): the logit is bounded through
  the last FFN by per-unit lines act(p) − s·p ∈ [m, M] and a linear functional of the
  attention outputs, bounded by the same LP / fractional program.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from flint import arb, arb_mat, ctx

from attncert.errors import SpecError
from attncert.kernel import soft_bounds as B
from attncert.model.positional import feature_matrix
from attncert.model.spec import Mask, Model, Readout

FORMAT, VERSION = "attncert-soft-certificate", 1
PRECISIONS = (53, 106, 212, 424, 848, 1696, 4096)


@dataclass(frozen=True)
class Failure:
    claim: str
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class SoftCheckReport:
    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...]

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(self.facts)
        return "REJECTED: " + "; ".join(str(f) for f in self.failures)


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


def _head_change(hd, u, mask, vis, out, changeable, du):
    """(other, self, α_max) change bounds of one head's output, rows = queries."""
    n, d = hd["v"][0].shape
    u_ch = np.where(changeable[None, :] & vis, u, 0.0)
    vlo, vhi = hd["v"]
    mlo, mhi = _reduce(vlo, mask, "min"), _reduce(vhi, mask, "max")
    one = np.zeros((n, d))
    live = np.nonzero(u_ch.max(axis=1) > 0)[0]
    step = max(1, (1 << 21) // max(1, n * d))
    for s in range(0, len(live), step):
        r = live[s : s + step]
        spread = np.maximum(B.up(vhi[None] - mlo[r][:, None]), B.up(mhi[r][:, None] - vlo[None]))
        one[r] = B.up(u_ch[r][:, :, None] * np.maximum(spread, 0.0)).max(axis=1)
    width = np.where(np.isfinite(mlo), B.up(mhi - mlo), 0.0)
    dv = _finite0(_reduce(B.pmat_up(du, hd["mabs"].T), mask, "max"))
    dk = _finite0(_reduce(B.pmat_up(du, hd["wk"].T), mask, "max"))
    dq = B.pmat_up(du, hd["wq"].T)
    kabs = _finite0(_reduce(B.absmax(*hd["k"]), mask, "max"))
    beta = max(abs(hd["beta"][0]), abs(hd["beta"][1]))
    eps = B.up(B.up(B.psum_up(B.up(dq * kabs)) + B.psum_up(B.up(B.absmax(*hd["q"]) * dk))) * beta)
    tv = np.minimum(B.up(2.0 * eps), 1.0)
    other = B.up(one + B.up(dv + B.up(tv[:, None] * width)))
    none = ~vis.any(axis=1)
    other = np.where(none[:, None], 0.0, other)
    self_ = np.where(none[:, None], 0.0, B.up(out[1] - out[0]))
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
    out = np.full(lam.shape, np.nan)
    for margin in (2.0**-40, 2.0**-30, 2.0**-20, 2.0**-10):
        cand = B.up(lam + margin * np.maximum(1.0, np.abs(lam)))
        gap = B.up(v_hi - cand)
        term = np.where(gap >= 0, B.up(e_hi[..., None] * gap), B.up(e_lo[..., None] * gap))
        f = B.sum_up(np.where(val[..., None], term, -np.inf).max(axis=1).T)
        out = np.where(np.isnan(out) & (f <= 0), cand, out)
    return out


def _exact(q, k, v, valid, beta, mask, queries):
    """[min, max] of Σ a ṽ over all completions at each query (layer 1)."""
    n, kk = valid.shape
    c = v[0].shape[-1]
    vis = mask.matrix(n)
    lo, hi = np.full((len(queries), c), np.inf), np.full((len(queries), c), -np.inf)
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
            hi[row] = np.maximum(hi[row], np.where(np.isnan(top), np.inf, top))
            lo[row] = np.minimum(lo[row], np.where(np.isnan(bot), -np.inf, bot))
    return lo, hi


# ----------------------------------------------------------------------------- propagation


def _options(model: Model, rho: str):
    sym = tuple(model.token_index[s] for s in model.alphabet)
    opts = [(model.token_index[model.bos],)] if model.bos is not None else []
    opts += [sym if c == "*" else (model.token_index[c],) for c in rho]
    if model.eos is not None:
        opts.append((model.token_index[model.eos],))
    return opts


def _readout_index(model: Model, n: int):
    return None if model.readout.pooled else model.readout.index(model.n_tokens(n))


def _ffn(ffn, box, changes):
    pre = B.lin(*box, ffn.w1, ffn.b1)
    out = B.lin(*B.act_box(ffn.activation.value, *pre), ffn.w2, ffn.b2)
    slope = B.absmax(*B.act_slopes(ffn.activation.value, *pre))
    w1, w2 = np.abs(ffn.w1).T, np.abs(ffn.w2).T
    return out, [B.pmat_up(B.up(slope * B.pmat_up(c, w1)), w2) for c in changes]


def _norm(norm, box, changes):
    lo, hi, s_max, n_abs, _ = B.layernorm(norm, *box)
    return (lo, hi), [B.layernorm_change(norm, c, s_max, n_abs) for c in changes]


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
    r = _readout_index(model, n)
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
    box = (
        np.where(valid[..., None], y_opt[0], np.inf).min(axis=1),
        np.where(valid[..., None], y_opt[1], -np.inf).max(axis=1),
    )
    other = np.zeros((n_tok, d))
    selfc = np.where(changeable[:, None], B.up(box[1] - box[0]), 0.0)
    crown = _crown_ok(model, r)
    result = None
    for li, layer in enumerate(model.layers):
        last = li == len(model.layers) - 1
        pre = layer.pre_norm
        if pre and layer.norm1 is not None:
            u, (u_o,) = _norm(layer.norm1, box, [other])
            if li == 0:
                fl = B.layernorm(layer.norm1, y_opt[0].reshape(-1, d), y_opt[1].reshape(-1, d))
                u_opt = (fl[0].reshape(y_opt[0].shape), fl[1].reshape(y_opt[1].shape))
        else:
            u, u_o, u_opt = box, other, y_opt if li == 0 else None
        queries = None
        if li == 0 and layer.heads:
            if len(model.layers) == 1 and r is not None:
                queries = np.array([r])
            elif n_tok * n_tok * kk * kk * d <= 1 << 25:
                queries = np.arange(n_tok)
        att = (np.zeros((n_tok, d)), np.zeros((n_tok, d)))
        att_o, att_s = np.zeros((n_tok, d)), np.zeros((n_tok, d))
        ctxs = []
        for head in layer.heads:
            beta = _beta(head, n_tok)
            hd = _head(head, *u, beta)
            vis = head.mask.matrix(n_tok)
            low, up_w = _weights(
                *B.imul(*B.dots(*hd["q"], *hd["k"]), np.float64(beta[0]), np.float64(beta[1])), vis
            )
            out = _average(low, up_w, *hd["v"], head.mask, lp)
            out = B.iadd(*out, *hd["bias"])
            none = ~vis.any(axis=1)
            out = (
                np.where(none[:, None], hd["b_o"], out[0]),
                np.where(none[:, None], hd["b_o"], out[1]),
            )
            opt = None
            if li == 0 and (queries is not None or (last and crown)):
                flat = (u_opt[0].reshape(-1, d), u_opt[1].reshape(-1, d))
                ho = _head(head, *flat, beta)
                opt = {
                    key: (ho[key][0].reshape(n_tok, kk, -1), ho[key][1].reshape(n_tok, kk, -1))
                    for key in ("q", "k", "v")
                }
                opt["valid"], opt["u"] = valid, u_opt
            if queries is not None:
                e_lo, e_hi = _exact(opt["q"], opt["k"], opt["v"], valid, beta, head.mask, queries)
                e_lo, e_hi = B.iadd(e_lo, e_hi, *hd["bias"])
                seen = np.isfinite(e_lo) & np.isfinite(e_hi)
                o_lo, o_hi = out[0].copy(), out[1].copy()
                o_lo[queries] = np.where(seen, np.maximum(o_lo[queries], e_lo), o_lo[queries])
                o_hi[queries] = np.where(seen, np.minimum(o_hi[queries], e_hi), o_hi[queries])
                out = (o_lo, o_hi)
            ch_o, ch_s, _ = _head_change(hd, up_w, head.mask, vis, out, changeable, u_o)
            if last and crown:
                ctxs.append((head, hd, low, up_w, vis, opt))
            att = B.iadd(*att, *out)
            att_o, att_s = B.up(att_o + ch_o), B.up(att_s + ch_s)
        y_r = (box[0][r], box[1][r], other[r]) if last and crown else None
        if layer.residual:
            box, other, selfc = B.iadd(*box, *att), B.up(other + att_o), B.up(selfc + att_s)
        else:
            box, other, selfc = att, att_o, att_s
        if last and crown:
            result = _crown(
                model, layer, ctxs, u, u_o, changeable, r, lp, y_r, (box[0][r], box[1][r]), other[r]
            )
        if not pre and layer.norm1 is not None:
            box, (other, selfc) = _norm(layer.norm1, box, [other, selfc])
        if layer.ffn is not None:
            if pre and layer.norm2 is not None:
                f_in, f_ch = _norm(layer.norm2, box, [other, selfc])
            else:
                f_in, f_ch = box, [other, selfc]
            f_box, (f_o, f_s) = _ffn(layer.ffn, f_in, f_ch)
            if layer.residual:
                box, other, selfc = B.iadd(*box, *f_box), B.up(other + f_o), B.up(selfc + f_s)
            else:
                box, other, selfc = f_box, f_o, f_s
        if not pre and layer.norm2 is not None:
            box, (other, selfc) = _norm(layer.norm2, box, [other, selfc])
    if model.final_norm is not None:
        box, (other, selfc) = _norm(model.final_norm, box, [other, selfc])
    if r is None:
        f_lo, f_hi = B.dn(B.sum_dn(box[0], axis=0) / n_tok), B.up(B.sum_up(box[1], axis=0) / n_tok)
        worst = selfc[changeable].max(axis=0) if changeable.any() else np.zeros(d)
        f_ch = B.up(B.up(B.psum_up(other, axis=0) + worst) / n_tok)
    else:
        f_lo, f_hi, f_ch = box[0][r], box[1][r], other[r]
    w = model.readout.weight
    z = B.lin(f_lo[None], f_hi[None], w[None], np.array([model.readout.bias]))
    z_lo, z_hi = float(z[0][0, 0]), float(z[1][0, 0])
    change = float(B.pmat_up(f_ch[None], np.abs(w)[:, None])[0, 0])
    if result is not None:
        z_lo, z_hi, change = max(z_lo, result[0]), min(z_hi, result[1]), min(change, result[2])
    if not changeable.any():
        change = 0.0
    return z_lo, z_hi, change, B.absmax(f_lo, f_hi)


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


def _crown(model, layer, ctxs, u, u_o, changeable, r, lp, y_r, t_box, t_ch):
    """(z_lo, z_hi, change) by back-substitution through the last FFN (module docstring)."""

    def project(head, hd, rows):
        p = B.matprod(rows, head.w_o)
        cm = B.matprod_r(*p, head.w_v)
        v = B.lin(*u, cm[0], None, cm[1])
        bias = B.lin(hd["bias"][0][None], hd["bias"][1][None], rows)
        b_o = B.lin(hd["b_o"][None], hd["b_o"][None], rows)
        return v, (bias[0][0], bias[1][0]), (b_o[0][0], b_o[1][0]), cm

    def o_range(rows):
        tot = np.zeros(len(rows)), np.zeros(len(rows))
        for head, hd, low, up_w, vis, opt in ctxs:
            v, bias, b_o, cm = project(head, hd, rows)
            if not vis[r].any():
                tot = B.iadd(*tot, *b_o)
                continue
            lo, hi = _average(low[r : r + 1], up_w[r : r + 1], *v, head.mask, lp, rows=[r])
            lo, hi = lo[0], hi[0]
            if opt is not None:
                n_tok, kk, d = opt["u"][0].shape
                vo = B.lin(
                    opt["u"][0].reshape(-1, d), opt["u"][1].reshape(-1, d), cm[0], None, cm[1]
                )
                vo = (vo[0].reshape(n_tok, kk, -1), vo[1].reshape(n_tok, kk, -1))
                e = _exact(
                    opt["q"], opt["k"], vo, opt["valid"], hd["beta"], head.mask, np.array([r])
                )
                lo = np.where(np.isfinite(e[0][0]), np.maximum(lo, e[0][0]), lo)
                hi = np.where(np.isfinite(e[1][0]), np.minimum(hi, e[1][0]), hi)
            tot = B.iadd(*tot, *B.iadd(lo, hi, *bias))
        return tot

    def o_change(rows):
        tot = np.zeros(len(rows))
        for head, hd, _, up_w, vis, _ in ctxs:
            v, bias, _, cm = project(head, hd, rows)
            hp = dict(hd, v=v, bias=bias, mabs=B.up(np.abs(cm[0]) + cm[1]))
            zero = np.zeros((vis.shape[0], len(rows)))
            tot = B.up(
                tot + _head_change(hp, up_w, head.mask, vis, (zero, zero), changeable, u_o)[0][r]
            )
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


# ----------------------------------------------------------------------------- arb forward


def _rows(m) -> list[list[arb]]:
    return [list(r) for r in m.tolist()]


def _affine_rows(rows, w, b):
    """rows @ wᵀ + b in arb (rows: list of lists)."""
    out = _rows(arb_mat(rows) * arb_mat(w.T.tolist()))
    return [[x + float(bb) for x, bb in zip(row, b, strict=True)] for row in out]


def _ln_rows(norm, rows):
    out = []
    for row in rows:
        d = len(row)
        mu = sum(row, arb(0)) / d
        c = [x - mu for x in row]
        s = (sum((x * x for x in c), arb(0)) / d + float(norm.eps)).sqrt()
        out.append(
            [x / s * float(g) + float(b) for x, g, b in zip(c, norm.weight, norm.bias, strict=True)]
        )
    return out


def _act(kind: str, x: arb) -> arb:
    if kind == "relu":
        return (x + abs(x)) / 2
    if kind == "gelu":
        return x * (1 + (x / arb(2).sqrt()).erf()) / 2
    u = (2 / arb.pi()).sqrt() * (x + arb(44715) / 1000000 * x * x * x)
    return x * (1 + u.tanh()) / 2


def logit_ball(model: Model, string: str, prec: int) -> arb:
    """The readout logit w·r + b of ``string``, enclosed in arb at ``prec`` bits (the exact
    real-number semantics of the model file; every weight is an exact dyadic rational)."""
    old = ctx.prec
    ctx.prec = prec
    try:
        tokens = model.encode(string)
        n_tok = len(tokens)
        emb = model.embedding
        ys = [[arb(float(v)) for v in emb.word[t]] for t in tokens]
        if emb.features:
            phi = feature_matrix(emb.features, n_tok)
            pos = _rows(arb_mat(phi.tolist()) * arb_mat(emb.pos_weight.T.tolist()))
            ys = [[a + b for a, b in zip(y, p, strict=True)] for y, p in zip(ys, pos, strict=True)]
        if emb.table is not None:
            if n_tok > emb.table.shape[0]:
                raise SpecError(f"{n_tok} tokens exceed the learned position table")
            ys = [
                [a + float(b) for a, b in zip(y, emb.table[t], strict=True)]
                for t, y in enumerate(ys)
            ]
        r = _readout_index(model, len(string))
        for li, layer in enumerate(model.layers):
            rows = [r] if li == len(model.layers) - 1 and r is not None else list(range(n_tok))
            pre = layer.pre_norm
            us = _ln_rows(layer.norm1, ys) if pre and layer.norm1 is not None else ys
            att = [[arb(0)] * model.d for _ in rows]
            for head in layer.heads:
                t = head.temperature
                beta = arb(float(t.coef)) * arb(n_tok) ** arb(float(t.n_power))
                if t.log_power:
                    beta *= arb(n_tok).log() ** arb(float(t.log_power))
                q = _affine_rows([us[j] for j in rows], head.w_q, head.bias("b_q"))
                k = _affine_rows(us, head.w_k, head.bias("b_k"))
                v = arb_mat(_affine_rows(us, head.w_v, head.bias("b_v")))
                s = _rows(arb_mat(q) * arb_mat(k).transpose())
                wts = []
                for j, srow in zip(rows, s, strict=True):
                    keys = [w for w in range(n_tok) if head.mask.allowed(j, w)]
                    row = [arb(0)] * n_tok
                    if keys:
                        z = [beta * srow[w] for w in keys]
                        top = max(float(x.mid()) for x in z)
                        e = [(x - top).exp() for x in z]
                        tot = sum(e, arb(0))
                        for w, ew in zip(keys, e, strict=True):
                            row[w] = ew / tot
                    wts.append(row)
                mixed = _affine_rows(_rows(arb_mat(wts) * v), head.w_o, head.bias("b_o"))
                for a_row, out in zip(att, mixed, strict=True):  # no key: W_O·0 + b_O
                    for c in range(model.d):
                        a_row[c] = a_row[c] + out[c]
            base = [ys[j] for j in rows]
            ys = [
                [a + b for a, b in zip(y, o, strict=True)] if layer.residual else o
                for y, o in zip(base, att, strict=True)
            ]
            if not pre and layer.norm1 is not None:
                ys = _ln_rows(layer.norm1, ys)
            if layer.ffn is not None:
                f = layer.ffn
                fin = _ln_rows(layer.norm2, ys) if pre and layer.norm2 is not None else ys
                h = [
                    [_act(f.activation.value, x) for x in row]
                    for row in _affine_rows(fin, f.w1, f.b1)
                ]
                ff = _affine_rows(h, f.w2, f.b2)
                ys = [
                    [a + b for a, b in zip(y, o, strict=True)] if layer.residual else o
                    for y, o in zip(ys, ff, strict=True)
                ]
            if not pre and layer.norm2 is not None:
                ys = _ln_rows(layer.norm2, ys)
            if rows == [r]:
                ys = {r: ys[0]}  # only the readout row from here on
                ys = [ys.get(j) for j in range(n_tok)]
        if model.final_norm is not None:
            idx = [j for j, y in enumerate(ys) if y is not None]
            normed = _ln_rows(model.final_norm, [ys[j] for j in idx])
            for j, y in zip(idx, normed, strict=True):
                ys[j] = y
        vec = (
            ys[r]
            if r is not None
            else [sum((y[c] for y in ys), arb(0)) / n_tok for c in range(model.d)]
        )
        return sum(
            (x * float(w) for x, w in zip(vec, model.readout.weight, strict=True)), arb(0)
        ) + float(model.readout.bias)
    finally:
        ctx.prec = old


def ball_text(x: arb) -> str:
    """An exact text of the ball: mantissa p exponent ± mantissa p exponent."""
    mm, me = x.mid().man_exp()
    rm, re_ = x.rad().man_exp()
    return f"{mm}p{me} +/- {rm}p{re_}"


def decide(model: Model, string: str) -> tuple[int | None, arb]:
    """The least precision of :data:`PRECISIONS` at which the logit's sign is decided, and
    the ball there (None and the last ball if even 4096 bits leave 0 inside)."""
    ball_ = None
    for prec in PRECISIONS:
        ball_ = logit_ball(model, string, prec)
        if ball_ > 0 or ball_ < 0:
            return prec, ball_
    return None, ball_


# ----------------------------------------------------------------------------- the check


def _field(d, key, kind, where, optional=False):
    if not isinstance(d, dict):
        raise SpecError("expected a JSON object", where=where)
    v = d.get(key)
    if v is None:
        if optional:
            return None
        raise SpecError(f"missing field {key!r}", where=where)
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise SpecError(f"field {key!r} has the wrong type {type(v).__name__}", where=where)
    return v


def _range(d, where):
    z = _field(d, "z_range", list, where)
    if len(z) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in z):
        raise SpecError("z_range must be two numbers", where=where)
    return float(z[0]), float(z[1])


def _readout_model(model: Model, spec):
    """The model whose readout is the claimed functional, and the rounding error of its
    weights (lm_difference a − b is rounded to float; the error is added to the bound)."""
    if spec == "accept":
        return model, 0.0
    pair = spec.get("lm_difference") if isinstance(spec, dict) else None
    r = model.readout
    if not (isinstance(pair, list) and len(pair) == 2 and all(p in r.lm_symbols for p in pair)):
        raise SpecError(f"readout {spec!r}", expected="'accept' or {'lm_difference': [a, b]}")
    i, j = (r.lm_symbols.index(p) for p in pair)
    w = r.lm_weight[i] - r.lm_weight[j]
    b = float(r.lm_bias[i] - r.lm_bias[j])
    err_w = np.maximum(B.up(w) - w, w - B.dn(w))  # ≥ |exact − float| (one rounding)
    err_b = float(max(B.up(b) - b, b - B.dn(b)))
    derived = dataclasses.replace(model, readout=Readout(w, b, position=r.position))
    return derived, (err_w, err_b)


def check(data: dict, model: Model) -> SoftCheckReport:
    """Re-derive every claim of the certificate ``data`` (a parsed JSON object) for
    ``model`` (module docstring)."""
    fails: list[Failure] = []
    facts: list[str] = []

    def fail(claim, where, reason):
        fails.append(Failure(claim, where, reason))
        return SoftCheckReport(False, tuple(fails), tuple(facts))

    try:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            return fail("format", "format/version", f"expected {FORMAT!r} version {VERSION}")
        m = _field(data, "model", dict, "model")
        digest = _field(m, "sha256", str, "model")
        if digest != model.digest:
            return fail(
                "model",
                "model.sha256",
                f"certificate is for model {digest[:12]}…, "
                f"this model's hash is {model.digest[:12]}…",
            )
        n = _field(data, "n", int, "n")
        if n < 1:
            return fail("n", "n", f"length {n}")
        meth = _field(data, "method", dict, "method")
        lp = _field(meth, "lp", bool, "method")
        tol = _field(meth, "tolerance", float, "method")
        if not 0 <= tol <= 1e-3:
            return fail("method", "method.tolerance", f"{tol} is outside [0, 1e-3]")
        facts.append(f"model {model.name} ({model.digest[:12]}…), n = {n}")

        def close(claimed, derived, what, where, side):
            """Soundness (side 'up': claimed ≥ derived; 'down': ≤) and fidelity."""
            bad = claimed < derived if side == "up" else claimed > derived
            if bad:
                return f"claimed {what} {claimed!r} is not sound: re-derived {derived!r}"
            if abs(claimed - derived) > tol * max(1.0, abs(derived)):
                return (
                    f"claimed {what} {claimed!r} is not what the propagation gives "
                    f"({derived!r}, tolerance {tol})"
                )
            return None

        sens = data.get("sensitivity")
        if sens is not None:
            model_s, err = _readout_model(
                model, _field(sens, "readout", (str, dict), "sensitivity")
            )
            per = _field(sens, "per_symbol", list, "sensitivity")
            r = _readout_index(model, n)
            off = model.input_offset()
            symbols = list(model.alphabet) if r is not None and 0 <= r - off < n else [None]
            if [e.get("symbol") if isinstance(e, dict) else e for e in per] != symbols:
                return fail(
                    "sensitivity",
                    "sensitivity.per_symbol",
                    f"one entry per readout symbol {symbols} is needed",
                )
            worst = 0.0
            for k, (entry, sym) in enumerate(zip(per, symbols, strict=True)):
                where = f"sensitivity.per_symbol[{k}]"
                rho = ["*"] * n
                if sym is not None:
                    rho[r - off] = sym
                z_lo, z_hi, change, r_abs = propagate(model_s, "".join(rho), True, lp)
                if err != 0.0:  # the float lm difference errs by ≤ err_w·|r| + err_b
                    slack = float(B.up(B.pmat_up(err[0][None], r_abs[:, None])[0, 0] + err[1]))
                    z_lo, z_hi = float(B.dn(z_lo - slack)), float(B.up(z_hi + slack))
                    change = float(B.up(change + 2 * slack))
                c_lo, c_hi = _range(entry, where)
                for msg in (
                    close(c_lo, z_lo, "z_lo", where, "down"),
                    close(c_hi, z_hi, "z_hi", where, "up"),
                    close(
                        _field(entry, "propagated", float, where),
                        change,
                        "propagated bound",
                        where,
                        "up",
                    ),
                ):
                    if msg:
                        return fail("sensitivity", where, msg)
                bound = min(float(B.up(c_hi - c_lo)), _field(entry, "propagated", float, where))
                if close(_field(entry, "bound", float, where), bound, "bound", where, "up"):
                    return fail(
                        "sensitivity", where, close(entry["bound"], bound, "bound", where, "up")
                    )
                worst = max(worst, entry["bound"])
            b_claim = _field(sens, "bound", float, "sensitivity")
            msg = close(b_claim, worst, "B(n)", "sensitivity.bound", "up")
            if msg:
                return fail("sensitivity", "sensitivity.bound", msg)
            facts.append(f"B({n}) = {b_claim:.6g} re-derived ({len(symbols)} readout symbol(s))")
            floor = sens.get("floor")
            if floor is not None:
                msg = _check_floor(floor, b_claim, n, tol)
                if msg:
                    return fail("floor", "sensitivity.floor", msg)
                facts.append(f"cross-entropy floor {floor['nats']:.6g} nats ({floor['kind']})")
        rest = data.get("restriction")
        rho = None
        decision = None
        if rest is not None:
            rho = _field(rest, "rho", str, "restriction")
            if len(rho) != n or any(c != "*" and c not in model.alphabet for c in rho):
                return fail(
                    "restriction", "restriction.rho", f"not a length-{n} restriction over Σ ∪ {{*}}"
                )
            decision = _field(rest, "decision", bool, "restriction")
            c_lo, c_hi = _range(rest, "restriction")
            z_lo, z_hi, _, _ = propagate(model, rho, False, lp)
            for msg in (
                close(c_lo, z_lo, "z_lo", "restriction", "down"),
                close(c_hi, z_hi, "z_hi", "restriction", "up"),
            ):
                if msg:
                    return fail("restriction", "restriction.z_range", msg)
            if (decision and not c_lo > 0) or (not decision and not c_hi < 0):
                return fail(
                    "restriction",
                    "restriction.decision",
                    f"the certified range [{c_lo!r}, {c_hi!r}] does not exclude 0 on the side of "
                    f"decision {decision}",
                )
            facts.append(
                f"every completion of ρ ({rho.count('*')}/{n} free) gets decision {decision}, "
                f"margin ≥ {min(abs(c_lo), abs(c_hi)) if decision is not None else 0:.4g}"
            )
        pair = data.get("pair")
        if pair is not None:
            msg = _check_pair(pair, model, n, rho, decision)
            if msg:
                return fail("pair", *msg)
            facts.append(
                f"pair {pair['strings'][0][:16]}… / {pair['strings'][1][:16]}… differs in "
                f"{pair['language']} and both get {pair['decision']} (arb, {pair['precision']} bits)"
            )
    except SpecError as err:
        return fail("format", err.where or "certificate", err.message)
    except B.Undecided as err:
        return fail("arithmetic", "propagation", f"undecided: {err}")
    return SoftCheckReport(True, (), tuple(facts))


def _check_floor(floor, b_claim: float, n: int, tol: float):
    kind = _field(floor, "kind", str, "sensitivity.floor")
    nats = _field(floor, "nats", float, "sensitivity.floor")
    term = (1 + (-arb(b_claim) / 2).exp()).log()
    if kind == "parity":
        derived = B.ball(term)[0]
    elif kind == "dyck2-bracket-type":
        p = _field(floor, "p", str, "sensitivity.floor")
        num, _, den = p.partition("/")
        if not (num.isdigit() and (den == "" or den.isdigit())):
            return f"p = {p!r} is not a fraction"
        pa = arb(int(num)) / (int(den) if den else 1)
        derived = B.ball((1 - pa) * _unbalanced(pa, n) * term)[0]
    else:
        return f"unknown floor kind {kind!r}"
    if nats > derived:
        return f"claimed floor {nats!r} nats exceeds the certified {derived!r}"
    if derived - nats > tol * max(1.0, derived):
        return f"claimed floor {nats!r} is not what B gives ({derived!r})"
    return None


def _unbalanced(pa: arb, n: int) -> arb:
    """P(prefix of length n is unbalanced and ends with a closer | length ≥ n), 2-Dyck PCFG
    (heights chain: up p, down 1 − p if h > 0, stop 1 − p at h = 0), in arb."""
    if n < 2:
        return arb(0)
    qa = 1 - pa
    opened, closed = [arb(0)] * (n + 2), [arb(0)] * (n + 2)
    opened[1] = pa
    for _ in range(n - 1):
        tot = [a + b for a, b in zip(opened, closed, strict=True)]
        opened = [arb(0)] + [x * pa for x in tot[:-1]]
        closed = [x * qa for x in tot[1:]] + [arb(0)]
        s = sum(opened, arb(0)) + sum(closed, arb(0))
        opened, closed = [x / s for x in opened], [x / s for x in closed]
    return sum(closed[1:], arb(0)) / (sum(opened, arb(0)) + sum(closed, arb(0)))


def _check_pair(pair, model: Model, n: int, rho, decision):
    strings = _field(pair, "strings", list, "pair")
    if len(strings) != 2 or not all(isinstance(s, str) and len(s) == n for s in strings):
        return "pair.strings", f"two strings of length {n} are needed"
    if strings[0] == strings[1]:
        return "pair.strings", "the two strings are equal"
    if rho is None:
        return "pair", "a pair needs a restriction whose decision it inherits"
    for s in strings:
        if any(r != "*" and r != c for r, c in zip(rho, s, strict=True)) or any(
            c not in model.alphabet for c in s
        ):
            return "pair.strings", f"{s[:24]}… is not a completion of the restriction"
    name = _field(pair, "language", str, "pair")
    member = _membership(name)
    if member is None:
        return (
            "pair.language",
            f"the checker decides membership for parity, parity-odd, dyck1, not {name!r}",
        )
    mem = [member(s) for s in strings]
    if mem[0] == mem[1]:
        return "pair.strings", f"both strings have membership {mem[0]} in {name}"
    if _field(pair, "membership", list, "pair") != mem:
        return "pair.membership", f"the strings' membership is {mem}"
    if _field(pair, "decision", bool, "pair") != decision:
        return "pair.decision", f"the restriction's certified decision is {decision}"
    prec = _field(pair, "precision", int, "pair")
    if prec not in PRECISIONS:
        return "pair.precision", f"{prec} is not one of {PRECISIONS}"
    texts = _field(pair, "logits", list, "pair")
    for k, s in enumerate(strings):
        ball_ = logit_ball(model, s, prec)
        if not (ball_ > 0 if decision else ball_ < 0):
            return (
                f"pair.logits[{k}]",
                f"the logit {ball_} at {prec} bits does not have the decision's sign",
            )
        if k >= len(texts) or texts[k] != ball_text(ball_):
            return (
                f"pair.logits[{k}]",
                f"the recorded enclosure is not the evaluation at {prec} bits ({ball_text(ball_)})",
            )
    return None


def _membership(name: str):
    if name == "parity":
        return lambda s: s.count("1") % 2 == 0
    if name == "parity-odd":
        return lambda s: s.count("1") % 2 == 1
    if name == "dyck1":

        def dyck(s):
            h = 0
            for c in s:
                h += 1 if c == "(" else -1 if c == ")" else 0
                if h < 0 or c not in "()":
                    return False
            return h == 0

        return dyck
    return None
