"""Bound propagation for the soft-certificate checker (trusted; see :mod:`attncert.kernel.soft.checker`).

:func:`propagate` returns, for all completions of a restriction, the readout logit's
range and (when every free input position but the readout token may change) the bound
on its change under one changed position. The steps and the facts they rest on are
listed in :mod:`attncert.kernel.soft.checker`'s docstring; the arithmetic is
:mod:`attncert.kernel.core.bounds`.
"""

from __future__ import annotations

import numpy as np

from attncert.errors import SpecError
from attncert.kernel.core import bounds as B
from attncert.kernel.soft import heads as H
from attncert.kernel.soft import readout as soft_readout
from attncert.model.positional import feature_matrix
from attncert.model.spec import Model

# ----------------------------------------------------------------------------- propagation

# version-3 kinds handled (RMSNorm, gated MLPs, SiLU, RoPE, parallel residual); not ALiBi
SUPPORTED = ("RMSNorm", "gated MLP", "silu activation", "rotary positions", "parallel residual")


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


def _hidden(ffn, lo, hi):
    """Box of act(W₁x + b₁), or act(W_g x + b_g) ⊙ (W₁x + b₁) for a gated MLP."""
    kind = ffn.activation.value
    if not ffn.gated:
        return B.act_box(kind, *B.lin(lo, hi, ffn.w1, ffn.b1))
    return B.imul(
        *B.act_box(kind, *B.lin(lo, hi, ffn.w_gate, ffn.b_gate)), *B.lin(lo, hi, ffn.w1, ffn.b1)
    )


def _jac(ffn, lo, hi, residual):
    """J⁺ ≥ |[I +] A diag(s) C| for every s in the box: the FFN's Jacobian at any point of
    the input rows [lo, hi] (mean value theorem per coordinate). Plain: A = W₂, C = W₁,
    s = act′(W₁x + b₁); gated (g = W_g x + b_g, u = W₁x + b₁): J = W₂ diag(act′(g)⊙u) W_g +
    W₂ diag(act(g)) W₁, so A = [W₂ W₂], C = [W_g; W₁], s = (act′(G)·U, act(G)).
    J⁺ = |fl(A (s_mid ⊙ C))|(1 + 4u) + |A| diag(s_rad + g|s_mid|) |C| (1 + g)."""
    kind = ffn.activation.value
    if ffn.gated:
        gb, ub = B.lin(lo, hi, ffn.w_gate, ffn.b_gate), B.lin(lo, hi, ffn.w1, ffn.b1)
        dl, dh = B.imul(*B.act_slopes(kind, *gb), *ub)
        al, ah = B.act_box(kind, *gb)
        sl, sh = np.concatenate([dl, al], axis=1), np.concatenate([dh, ah], axis=1)
        wa, wc = np.hstack([ffn.w2, ffn.w2]), np.vstack([ffn.w_gate, ffn.w1])
    else:
        sl, sh = B.act_slopes(kind, *B.lin(lo, hi, ffn.w1, ffn.b1))
        wa, wc = ffn.w2, ffn.w1
    sm = 0.5 * sl + 0.5 * sh
    sr = np.maximum(B.up(sh - sm), B.up(sm - sl))
    g = B.g2(wc.shape[0] + 1)
    jm = np.einsum("ik,rkj->rij", wa, sm[:, :, None] * wc)
    if residual:
        jm = jm + np.eye(wc.shape[1])[None]
    err = np.einsum(
        "ik,rkj->rij", np.abs(wa), B.up(sr + B.up(g * np.abs(sm)))[:, :, None] * np.abs(wc)
    )
    return B.up(B.up(np.abs(jm) * (1.0 + 2.0**-51)) + B.up(err * (1.0 + g) + 2.0**-1000))


def _japply(jp, v):
    return B.up(np.einsum("rij,rj->ri", jp, v) * (1.0 + B.g2(v.shape[-1])) + 2.0**-1000)


def _ffn(ffn, valid, box, other, selfc, residual):
    """FFN (plus its input when ``residual``) on rows: the plain interval map ∩ the centred
    form f(c) ± J⁺r; changes through J⁺ (rows) and J⁺ of each position's hull (self)."""
    plain = B.lin(*_hidden(ffn, *box), ffn.w2, ffn.b2)
    c, rad = B.centre(*box)
    f_c = B.lin(*_hidden(ffn, c, c), ffn.w2, ffn.b2)
    if residual:
        plain, f_c = B.iadd(*box, *plain), B.iadd(c, c, *f_c)
    jp = _jac(ffn, *box, residual)
    wid = _japply(jp, rad)
    out = np.maximum(plain[0], B.dn(f_c[0] - wid)), np.minimum(plain[1], B.up(f_c[1] + wid))
    B.finite(*out)
    jp_pos = _jac(ffn, *H._hull(valid, *box), residual)
    return out, _japply(jp, other), _japply(jp_pos, selfc)


def _norm(norm, valid, box, other, selfc=None):
    """LayerNorm on rows; the changed position's own change through each position's hull."""
    lo, hi, s_max, n_abs, _ = B.layernorm(norm, *box)
    out_o = B.layernorm_change(norm, other, s_max, n_abs)
    if selfc is None:
        return (lo, hi), out_o, None
    _, _, s_p, n_p, _ = B.layernorm(norm, *H._hull(valid, *box))
    return (lo, hi), out_o, B.layernorm_change(norm, selfc, s_p, n_p)


def _crown_ok(model: Model, r) -> bool:
    # the back-substitution knows ungated MLPs and unrotated heads only
    if r is None or not model.layers or model.final_norm is not None or model.new_kinds:
        return False
    last = model.layers[-1]
    if not last.pre_norm and (last.norm1 is not None or last.norm2 is not None):
        return False
    return not (last.pre_norm and last.norm2 is not None and last.ffn is not None)


def propagate(model: Model, rho: str, changeable_all: bool, lp: bool = True):
    """(z_lo, z_hi, change) of the readout over all completions of ``rho``; with
    ``changeable_all`` every free input position but the readout token may change."""
    model.require_classic("the box propagation (attncert.kernel.soft.propagate)", SUPPORTED)
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
    h_lo, h_hi = H._hull(valid, *box)
    selfc = np.where(changeable[:, None], B.up(h_hi - h_lo), 0.0)
    crown = _crown_ok(model, r) and valid[r].sum() == 1
    r_rows = None if r is None else np.nonzero(rows_pos == r)[0][valid[r]]
    result = None
    for li, layer in enumerate(model.layers):
        last = li == len(model.layers) - 1
        pre = layer.pre_norm
        x0 = (box, other, selfc)  # a parallel layer's FFN reads the layer input
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
            beta = H._beta(head, n_tok)
            hd = H._head(head, *u, beta, rows_pos)
            vis = head.mask.matrix(n_tok)
            low, up_w = H._weights(*H._scores(hd, valid), vis[rows_pos])
            v_key = H._hull(valid, *hd["v"])
            lo_, hi_ = (
                H._reduce(v_key[0], head.mask, "min")[rows_pos],
                H._reduce(v_key[1], head.mask, "max")[rows_pos],
            )
            if lp:
                sel = np.nonzero(up_w.max(axis=1) < 1.0 - 2.0**-10)[0]
                if len(sel):
                    hi_[sel] = np.minimum(hi_[sel], H._dual(low[sel], up_w[sel], v_key[1]))
                    lo_[sel] = np.maximum(lo_[sel], -H._dual(low[sel], up_w[sel], -v_key[0]))
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
                ho = H._head(head, *u, beta, rows_pos)
                opt = {
                    key: (ho[key][0].reshape(n_tok, kk, -1), ho[key][1].reshape(n_tok, kk, -1))
                    for key in ("q", "k", "v")
                }
                opt["valid"], opt["u"] = (
                    valid,
                    (u[0].reshape(n_tok, kk, d), u[1].reshape(n_tok, kk, d)),
                )
            if queries is not None:
                e_lo, e_hi = H._exact(opt["q"], opt["k"], opt["v"], valid, beta, head.mask, queries)
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
            ch_o, ch_s, _ = H._head_change(hd, up_w, head.mask, vis, out, changeable, u_o, valid)
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
            result = soft_readout.crown(
                model, layer, ctxs, u, u_o, changeable, r, lp, y_r, t_r, other[r_rows].max(0), valid
            )
        if not pre and layer.norm1 is not None:
            box, other, selfc = _norm(layer.norm1, valid, box, other, selfc)
        if layer.ffn is not None:
            # parallel (pre-norm, residual): y + attn(LN₁y) + FFN(LN₂y) with y the layer input
            same = layer.residual and not layer.parallel and not (pre and layer.norm2 is not None)
            src = x0 if layer.parallel else (box, other, selfc)
            if pre and layer.norm2 is not None:
                f_in, f_o, f_s = _norm(layer.norm2, valid, *src)
            else:
                f_in, f_o, f_s = src
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
        p_lo, p_hi = H._hull(valid, *box)
        f_lo, f_hi = B.dn(B.sum_dn(p_lo, axis=0) / n_tok), B.up(B.sum_up(p_hi, axis=0) / n_tok)
        worst = selfc[changeable].max(axis=0) if changeable.any() else np.zeros(d)
        f_ch = B.up(B.up(B.psum_up(H._pmax(valid, other), axis=0) + worst) / n_tok)
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
