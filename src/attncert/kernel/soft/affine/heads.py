"""The attention layers of the affine-form propagation (trusted; see
:mod:`attncert.kernel.soft.affine.bound`): layer 1 exactly separable per key position, later
layers with a linearized softmax.
"""

from __future__ import annotations

import numpy as np
from flint import arb

from attncert.arith import enclose
from attncert.kernel.core import bounds as B
from attncert.kernel.soft.affine import forms as A
from attncert.kernel.soft.affine.rows import BUDGET, Rows, Unsupported, flat_sum, keys, mix, ratio
from attncert.model.spec import AttentionKind, Model

__implements__ = ("Hahn Theorem 6",)

_U = 2.0**-53
_TINY = 2.0**-1000


def beta_enclosure(head, n_tok: int) -> tuple[float, float]:
    t = head.temperature
    val = arb(float(t.coef)) * arb(n_tok) ** arb(float(t.n_power))
    if t.log_power:
        val *= arb(n_tok).log() ** arb(float(t.log_power))
    return B.ball(val)


BLOCK = 32  # query rows of layer 1 handled at once


def _first_block(rows: Rows, qs: np.ndarray, vis_all, scores, ov_lo, ov_hi):
    """Layer 1 for the query rows ``qs`` of one head: N and D are sums of one term per
    visible key position, each a function of that position's token (module docstring),
    so their forms are the base rows' sum plus, per alternative, the difference of the
    enclosures' centres; the radii are remainders."""
    m, a = rows.m, rows.a
    n_rows = len(rows.pos)
    own = rows.pos[qs]  # (Q,)
    vis = vis_all[own]  # (Q, N) visible positions
    is_base = np.zeros(n_rows, dtype=bool)
    is_base[rows.base] = True
    vis_rows = vis[:, rows.pos]  # (Q, R)
    at_own = rows.pos[None, :] == own[:, None]
    base_term = vis_rows & is_base[None] & ~at_own
    base_term[np.arange(len(qs)), qs] = vis[np.arange(len(qs)), own]  # the query's own row
    gmask = (
        (vis[:, rows.free] & (rows.free[None] != own[:, None]))
        if m
        else np.zeros((len(qs), 0), dtype=bool)
    )
    alt_term = np.zeros_like(base_term)
    if m:
        alt_term[:, rows.alt.ravel()] = np.repeat(gmask, a, axis=1)
    used = base_term | alt_term
    s_lo, s_hi = scores
    top = np.where(used, s_hi, -np.inf).max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    # keys not used by a query can score above its top: their terms are zeroed below,
    # but e^x is only tabulated for x ≤ 0
    e_lo, e_hi = B.exp_le0_fine(
        np.minimum(B.dn(s_lo - top), 0.0), np.minimum(B.up(s_hi - top), 0.0)
    )
    e_lo, e_hi = np.where(used, e_lo, 0.0), np.where(used, e_hi, 0.0)
    e_mid, e_rad = B.centre(e_lo, e_hi)
    ov_mid, ov_rad = B.centre(ov_lo, ov_hi)
    # P = E·v: |P − e·v| ≤ e·v_rad + e_rad·(|v| + v_rad), plus the product's rounding
    # (≤ u|e·v|). Every term is non-negative and computed with at most six roundings
    # towards zero, so the factor (1 + 16u) and 2u|e·v| cover them without nextafter.
    p_mid = e_mid[..., None] * ov_mid[None]
    p_rad = e_mid[..., None] * ov_rad[None] + e_rad[..., None] * (np.abs(ov_mid) + ov_rad)[None]
    p_rad = p_rad * (1.0 + 16 * _U) + (2 * _U * np.abs(p_mid) + _TINY)
    bt = base_term.astype(float)
    k = base_term.sum(axis=1).max()
    g2 = B.g2(max(1, int(k)))
    dc = (e_mid * bt).sum(axis=1)
    nc = np.einsum("qr,qrk->qk", bt, p_mid)
    dr = B.up(B.psum_up(e_rad * bt, axis=1) + B.up(g2 * B.psum_up(np.abs(e_mid) * bt, axis=1)))
    nr = B.up(
        B.psum_up(p_rad * bt[..., None], axis=1)
        + B.up(g2 * B.psum_up(np.abs(p_mid) * bt[..., None], axis=1))
    )
    dg = np.zeros((len(qs), m, a))
    ng = np.zeros((len(qs), ov_lo.shape[1], m, a))
    if m:
        brow = rows.base[rows.free]  # (m,)
        gm = gmask.astype(float)
        dg = (e_mid[:, rows.alt] - e_mid[:, brow][..., None]) * gm[..., None]
        diff = (p_mid[:, rows.alt] - p_mid[:, brow][:, :, None]) * gm[..., None, None]
        ng = np.moveaxis(diff, -1, 1)  # (Q, d, m, A)
        # the alternative's radius beyond the base row's, and the differences' rounding
        d_extra = np.maximum(B.up(e_rad[:, rows.alt] - e_rad[:, brow][..., None]), 0.0)
        d_extra = B.up(d_extra + B.up(2 * _U * np.abs(dg)))
        dr = B.up(dr + B.psum_up(d_extra.max(axis=-1) * gm, axis=1))
        # centred choices: the centres gain x̄·Σ of the columns (module docstring)
        xbar = 1.0 / (a + 1)
        dc = dc + dg.sum(axis=(1, 2)) * xbar
        dr = B.up(dr + B.up(B.g2(m * a + 2) * B.psum_up(np.abs(dg).reshape(len(qs), -1), axis=1)))
        n_extra = np.maximum(B.up(p_rad[:, rows.alt] - p_rad[:, brow][:, :, None]), 0.0)
        n_extra = B.up(n_extra + B.up(2 * _U * np.abs(diff)))
        nr = B.up(nr + B.psum_up(n_extra.max(axis=2) * gm[..., None], axis=1))
        nc = nc + ng.sum(axis=(2, 3)) * xbar
        nr = B.up(nr + B.up(B.g2(m * a + 2) * flat_sum(np.abs(ng), 2)))
    ne = np.zeros((len(qs), ov_lo.shape[1], 0))
    de = np.zeros((len(qs), 0))
    # the hull of every row's value contains the hull of the keys used (a superset)
    hull_lo = np.broadcast_to(ov_lo.min(axis=0), (len(qs), ov_lo.shape[1]))
    hull_hi = np.broadcast_to(ov_hi.max(axis=0), (len(qs), ov_lo.shape[1]))
    seen = used.any(axis=1)
    if not seen.all():  # no visible key: the head outputs 0 there
        dc = np.where(seen, dc, 1.0)
        hull_lo = np.where(seen[:, None], hull_lo, 0.0)
        hull_hi = np.where(seen[:, None], hull_hi, 0.0)
    return ratio((nc, ng, ne, nr), (dc, dg, de, dr), hull_lo, hull_hi), seen


def first_layer(model: Model, rows: Rows, queries: np.ndarray) -> tuple[A.Form, int]:
    """Forms of layer 1's output after its attention sublayer (residual included) for the
    rows ``queries``, and how many entries were kept as hull boxes."""
    n_tok, m, a = rows.n_tok, rows.m, rows.a
    x = enclose.embed(model, rows.tok, rows.pos, n_tok)
    u = enclose.attention_inputs(model, 0, x)
    layer = model.layers[0]
    nq = len(queries)
    acc = A.point(np.zeros((nq, model.d)), np.zeros((nq, model.d)), m, a)
    boxed = 0
    for hi, head in enumerate(layer.heads):
        # queries and keys at their rows' positions: RoPE rotated, ALiBi as two more
        # coordinates (q′·k′ = q·k − m(i − j)), both enclosed by the arith library
        q, k, ov = enclose.projections_at(model, 0, hi, u, rows.pos)
        b_lo, b_hi = beta_enclosure(head, n_tok)
        vis_all = head.mask.matrix(n_tok)
        ov_lo, ov_hi = B.dn(ov.mid - ov.rad), B.up(ov.mid + ov.rad)
        qlo, qhi = B.dn(q.mid - q.rad), B.up(q.mid + q.rad)
        klo, khi = B.dn(k.mid - k.rad), B.up(k.mid + k.rad)
        c = np.zeros((nq, model.d))
        g = np.zeros((nq, model.d, m, a))
        r = np.zeros((nq, model.d))
        err = np.zeros((nq, model.d))
        for b0 in range(0, nq, BLOCK):
            qs = queries[b0 : b0 + BLOCK]
            s_lo, s_hi = B.dots(qlo[qs], qhi[qs], klo, khi)
            scores = B.imul(s_lo, s_hi, b_lo, b_hi)
            (y0, gl, _, rl, er, nb), seen = _first_block(rows, qs, vis_all, scores, ov_lo, ov_hi)
            sl = slice(b0, b0 + len(qs))
            keep = seen[:, None]
            c[sl], r[sl], err[sl] = np.where(keep, y0, 0.0), np.where(keep, rl, 0.0), er
            g[sl] = np.where(keep[..., None, None], gl, 0.0)
            boxed += nb
        hf = A.extend(A.Form(c, g, np.zeros((nq, model.d, 0)), r), err)
        if head.b_o is not None:
            hf = A.shift(hf, head.b_o)
        acc = A.add(acc, hf, shared=0)
    if layer.residual:
        acc = A.shift(acc, x.mid[queries], x.rad[queries])
    return acc, boxed


def collapse(f: A.Form) -> A.Form:
    """The rows' private symbols as a remainder (keys: another row's symbols)."""
    r = B.up(f.r + A.edev(f.E))
    return A.Form(f.c, f.G, f.E[..., :0], r)


def attention_layer(
    model: Model, li: int, f: A.Form, rows: Rows, queries: np.ndarray
) -> tuple[A.Form, int]:
    """Forms after layer ``li``'s attention sublayer (residual included) for the rows
    ``queries``; ``f`` holds every row's forms entering the layer."""
    layer = model.layers[li]
    n_tok, m, a = rows.n_tok, rows.m, rows.a
    u = A.layer_norm(f, layer.norm1) if layer.pre_norm and layer.norm1 is not None else f
    shared = u.E.shape[-1]
    work = len(queries) * f.rows * (m * a + shared) * model.d * max(1, len(layer.heads))
    if work > BUDGET:
        raise Unsupported(
            f"layer {li + 1} needs {len(queries)} query rows × {f.rows} key rows × "
            f"{m * a + shared} columns: beyond the affine method's budget"
        )
    acc = f.take(queries) if layer.residual else None
    boxed = 0
    for hi, head in enumerate(layer.heads):
        if head.kind is not AttentionKind.SOFTMAX:
            raise Unsupported(f"layers[{li}].heads[{hi}] is a hard head")
        b_lo, b_hi = beta_enclosure(head, n_tok)
        b_mid, b_rad = B.centre(np.array(b_lo), np.array(b_hi))
        q_all = _positioned(
            head, A.affine_map(u.take(queries), head.w_q, head.b_q), rows.pos[queries], True
        )
        k = collapse(_positioned(head, A.affine_map(u, head.w_k, head.b_k), rows.pos, False))
        ov = collapse(A.affine_map(A.affine_map(u, head.w_v, head.b_v), head.w_o))
        k_dev = A.dev(k)
        ov_gdev = A.gdev(ov.G)
        ov_abs = B.up(B.up(np.abs(ov.c) + ov_gdev) + ov.r)
        vis_all = head.mask.matrix(n_tok)
        outs = []
        for qi, i in enumerate(queries):
            q = q_all.take([qi])
            kr, groups, alt = keys(rows, vis_all[rows.pos[i]], i)
            if len(kr) == 0:
                outs.append(None)
                continue
            used = np.concatenate([kr, alt.ravel()])
            outs.append(
                _query(q, k, ov, k_dev, ov_abs, (b_mid, b_rad, b_hi), used, kr, groups, alt, rows)
            )
            boxed += outs[-1][-1]
        c = np.zeros((len(queries), model.d))
        g = np.zeros((len(queries), model.d, m, a))
        e = np.zeros((len(queries), model.d, shared))
        r = np.zeros((len(queries), model.d))
        err = np.zeros((len(queries), model.d))
        for qi, o in enumerate(outs):
            if o is None:
                continue
            c[qi], g[qi], e[qi], r[qi], err[qi] = o[:5]
        hf = A.extend(A.Form(c, g, e, r), err)
        if head.b_o is not None:
            hf = A.shift(hf, head.b_o)
        acc = hf if acc is None else A.add(acc, hf, shared=shared)
    return acc, boxed


def _positioned(head, f: A.Form, positions: np.ndarray, query: bool) -> A.Form:
    """Query or key forms at their rows' token positions: rotated for a RoPE head
    (:func:`~attncert.kernel.soft.affine.forms.rotate`), extended by ALiBi's two
    coordinates (:func:`~attncert.kernel.soft.affine.forms.alibi_columns`)."""
    if head.rotary is not None:
        f = A.rotate(f, head.rotary, positions)
    if head.alibi is not None:
        f = A.alibi_columns(f, head.alibi, positions, query)
    return f


def _query(q, k, ov, k_dev, ov_abs, beta, used, kr, groups, alt, rows: Rows):
    """One query row of a later layer: the forms of N and D, then the ratio."""
    b_mid, b_rad, b_hi = beta
    qc, qg, qe = q.c[0], q.G[0], q.E[0]  # (dk,), (dk, m, A), (dk, e)
    q_dev = A.dev(q)[0]
    kc, kg = k.c[used], k.G[used]
    cs = kc @ qc
    gs = np.einsum("k,tkma->tma", qc, kg) + np.einsum("tk,kma->tma", kc, qg)
    es = kc @ qe
    dk = len(qc)
    q_mass = A.coeff_mass(q)[0]
    k_mass = A.coeff_mass(A.Form(kc, kg, np.zeros((len(used), dk, 0)), k.r[used]))
    rnd = B.up(B.g2(2 * dk + 2) * B.up(B.up(k_mass @ q_mass) + B.up(np.abs(kc) @ q_mass)))
    sr = B.up(B.up(k.r[used] @ np.abs(qc)) + B.up(np.abs(kc) @ q.r[0]))
    sr = B.up(B.up(sr + B.up(B.pmat_up(k_dev[used], q_dev))) + rnd)
    # × β (β_mid exact float, |β − β_mid| ≤ β_rad)
    cs, gs, es = cs * b_mid, gs * b_mid, es * b_mid
    qk_abs = B.up(B.up(np.abs(kc) @ np.abs(qc)) * (1 + B.g2(dk)))
    sr = B.up(
        B.up(B.up(sr * b_hi) + B.up(b_rad * B.up(qk_abs + B.up(A.gdev(gs) + A.edev(es)) + sr)))
        + B.up(4 * _U * B.up(np.abs(cs) + A._gsum(gs) + A.edev(es)))
    )
    # softmax is shift invariant: remove the affine part common to all keys (the base
    # rows come first in ``used``; any weights w give an exact shift)
    n_kr = len(kr)
    w = np.exp(cs[:n_kr] - cs[:n_kr].max())
    w /= w.sum()
    gs = gs - np.tensordot(w, gs[:n_kr], axes=1)
    es = es - w @ es[:n_kr]
    sr = B.up(sr + B.up(2 * _U * B.up(A._gsum(gs) + A.edev(es))))
    neg, pos = A.neg_pos(gs)
    ed = A.edev(es)
    d_lo = B.up(B.up(neg + ed) + sr)  # Δ ≥ −d_lo
    d_hi = B.up(B.up(pos + ed) + sr)  # Δ ≤ d_hi
    top = cs.max()
    ov_lo, ov_hi = A.bounds(ov.take(used))
    # per key, e^{s − M} either linearized (below) or as the constant box
    # [e^{lo − M}, e^{hi − M}]: whichever leaves the smaller remainder
    with np.errstate(over="ignore"):
        b_lo = B.exp_le0_fine(np.minimum(B.dn(B.dn(cs - d_lo) - top), 0.0), np.zeros(len(cs)))[0]
        b_hi = exp_up(B.up(B.up(cs + d_hi) - top))
    if not np.all(np.isfinite(b_hi)):  # a key may take every weight: only the hull is known
        mid, rad = B.centre(ov_lo.min(axis=0), ov_hi.max(axis=0))
        zero_g = np.zeros((len(mid), *gs.shape[1:]))
        return mid, zero_g, np.zeros((len(mid), qe.shape[-1])), rad, np.zeros(len(mid)), len(mid)
    box_c, box_r = B.centre(b_lo, b_hi)
    lin = d_hi <= 60.0
    dh = np.where(lin, d_hi, 0.0)
    e0_lo, e0_hi = B.exp_le0_fine(B.dn(cs - top), np.minimum(B.up(cs - top), 0.0))
    e0, e0_rad = B.centre(e0_lo, e0_hi)
    exp_dhi = exp_up(dh)  # e^{Δ} ≤ e^{d_hi}
    rho = np.maximum(B.up(0.5 * B.up(d_lo * d_lo)), B.up(B.up(0.5 * B.up(dh * dh)) * exp_dhi))
    dev_a = B.up(A.gdev(gs) + ed)  # the affine part of Δ
    er = B.up(B.up(e0 * B.up(sr + rho)) + B.up(e0_rad * exp_dhi))
    er = B.up(er + B.up(4 * _U * B.up(e0 * B.up(1.0 + B.up(A._gsum(gs) + ed)))))
    use_box = ~lin | (box_r < er)
    # D terms: e0·(1 + Δ_aff), or the box
    e_c = np.where(use_box, box_c, e0)
    er = np.where(use_box, box_r, er)
    dg = np.where(use_box[:, None, None], 0.0, gs * e0[:, None, None])
    de = np.where(use_box[:, None], 0.0, es * e0[:, None])
    # N terms: e0·(v_c + v_c Δ_aff + G_v x), or the box of E·v
    vc, vg = ov.c[used], ov.G[used]
    ng = e0[:, None, None, None] * (vc[:, :, None, None] * gs[:, None] + vg)
    ne = e0[:, None, None] * (vc[:, :, None] * es[:, None])
    nc = e0[:, None] * vc
    v_gdev = A.gdev(vg)
    nr = B.up(B.up(e0 * dev_a)[:, None] * v_gdev)
    nr = B.up(nr + B.up(B.up(e0 * B.up(1.0 + dev_a))[:, None] * ov.r[used]))
    nr = B.up(nr + B.up(er[:, None] * ov_abs[used]))
    nr = B.up(nr + B.up(8 * _U * B.up(B.up(np.abs(nc) + A._gsum(ng)) + A.edev(ne))))
    p_c, p_r = B.centre(*B.imul(b_lo[:, None], b_hi[:, None], ov_lo, ov_hi))
    n_box = ~lin | (p_r.max(axis=1) < nr.max(axis=1))
    nc = np.where(n_box[:, None], p_c, nc)
    nr = np.where(n_box[:, None], p_r, nr)
    ng = np.where(n_box[:, None, None, None], 0.0, ng)
    ne = np.where(n_box[:, None, None], 0.0, ne)
    loc = np.full(rows.pos.shape[0], -1, dtype=np.int64)
    loc[used] = np.arange(len(used))
    kr_l, brow_l, alt_l = loc[kr], loc[rows.base[rows.free[groups]]], loc[alt]
    d_f = mix(e_c, dg, de, er, kr_l, groups, brow_l, alt_l)
    n_f = mix(nc, ng, ne, nr, kr_l, groups, brow_l, alt_l)
    n_f = tuple(x[None] for x in n_f)
    d_f = tuple(np.asarray(x)[None] for x in d_f)
    hull = ov_lo.min(axis=0)[None], ov_hi.max(axis=0)[None]
    y0, gl, el, rl, err, nb = ratio(n_f, d_f, *hull)
    return y0[0], gl[0], el[0], rl[0], err[0], nb


def exp_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of e^x for any x (inf beyond float64)."""
    neg = B.exp_le0_fine(np.minimum(x, 0.0), np.minimum(x, 0.0))[1]
    with np.errstate(divide="ignore", over="ignore"):
        pos = B.up(1.0 / B.exp_le0_fine(-np.maximum(x, 0.0), -np.maximum(x, 0.0))[0])
    return np.where(x <= 0, neg, pos)
