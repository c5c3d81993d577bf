"""One bound propagation valid for every length n ≥ N₀ at once (trusted; the length-uniform
Lemma 5 of :mod:`attncert.kernel.uniform.checker`).

The per-n propagation (:mod:`attncert.kernel.soft.propagate`) keeps, per row (a position
and a token it may carry), a box over all inputs and a bound ``other`` on the change when
another position changes. Here a row is a *position class* (:mod:`.classes`) with
a token, its box holds for every N ≥ N₀' = N₀ + [BOS] + [EOS] and every position of the
class, and the change bound is kept as a **coefficient** O: |Δy_t| ≤ O_t/(N − 1) for every
N ≥ N₀', every string and every changed position i ≠ t. What depends on N, and how it is
bounded uniformly:

* **feature ranges**: exact rational ranges over all (i, N) of the class
  (:func:`.classes.feature_range`);
* **one key's weight** (the only source of change at the first attention): with scores
  s_jw ∈ [lo_jw, hi_jw] and m any shift, a_ji ≤ U_i/(U_i + Σ_{v≠i} L_v) ≤ U_i/((N − 1)·D_j)
  where U_i ≥ e^{hi_ji − m}, L_v ≤ e^{lo_jv − m}, and D_j ≤ Σ_{v≠i} L_v/(N − 1) for every
  N ≥ N₀': D_j = max(min_v L_v, Σ_middle classes f_c·L_c) with f_c the exact
  :func:`.classes.count_fraction`. So (N − 1)·a_ji ≤ U_i/D_j = e^Δ in the worst case
  — Lemma 5's e^Δ/(e^Δ + n − 1) ≤ e^Δ/(n − 1). These few numbers are computed in arb;
* **the change of a head output** at query j ≠ i (the per-n bound of
  :mod:`attncert.kernel.soft.heads` with every term a multiple of 1/(N − 1)):
  max_i (U_i/D_j)·max(v_hi,i − M_lo, M_hi − v_lo,i)⁺ + max_w |W_O W_V|·O_w +
  2β(|W_Q|O_j·max|k| + |q_j|·max_w |W_K|O_w)·(M_hi − M_lo); the per-n bound's
  min(1, 2ε) ≤ 2ε is all that is lost;
* **the output box** of a head: the hull of the visible values, and for the single-position
  classes s (BOS, EOS, the first and last positions) a weight ≤ ε_s = U_s/(U_s + (N₀' − 1)D_j)
  (the bound decreases in N): Σ a_w v_w ≤ H + Σ_s ε_s (v_s − H)⁺ with H the hull of the
  middle classes' values;
* **rotary heads** (RoPE, version 3): the score of query j and key w is
  q_jᵀR((w − j)·ω)k_w, and over all N ≥ N₀' the offset w − j takes every integer value in
  a class pair, so every angle must be allowed: per rotary pair p the term lies in
  [−‖q_p‖‖k_p‖, ‖q_p‖‖k_p‖] (R is a rotation — Lemma 5's bounded logits), the unrotated
  coordinates' dot as before; a score's change is ≤ Σ_p (‖Δq_p‖‖k_p‖ + ‖q_p‖‖Δk_p‖) with
  ‖Δx_p‖ ≤ Δx_a + Δx_b. No angle is evaluated, so nothing about cos or sin is trusted;
* **LayerNorm or RMSNorm, plain or gated feed-forward (GELU, ReLU, SiLU), residual,
  parallel residual (y + attn(LN₁y) + FFN(LN₂y)), readout**: the per-n steps (Lipschitz
  constants from the uniform boxes; every change map is positively homogeneous, so it maps
  coefficients to coefficients); a mean readout's change
  (1/N)(Σ_{t≠i} |Δy_t| + |Δy_i|) ≤ (max O + self)/(N − 1) where self bounds the changed
  position's own change. ALiBi (unbounded in n) and masks are outside Lemma 5
  (:func:`.classes.hypotheses`).

The result: the logit's range [z_lo, z_hi] over all n ≥ N₀ (the uniform range cap) and
K_tok with |z(x) − z(x^i)| ≤ K_tok/(N − 1), per readout symbol.

Coefficients can exceed float64 (e^Δ alone may): they are held as floats times 2^ex with
one integer exponent per array, rescaled by exact powers of two (rounded up where a
subnormal result rounds), and the results are exact dyadic rationals (:mod:`.dyadic`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from attncert.errors import UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.soft import heads as H
from attncert.kernel.soft.propagate import SUPPORTED, _ffn, _norm
from attncert.kernel.uniform import dyadic as Q
from attncert.kernel.uniform.classes import (
    Layout,
    count_fraction,
    feature_ranges,
    hypotheses,
    layout,
    used_features,
)
from attncert.model.spec import Model

_CEIL = 2.0**256  # stored coefficients are kept below this (their exponent absorbs the rest)


@dataclass(frozen=True)
class HeadRecord:
    """One head's uniform constants: β's range and the largest (N − 1)·(one key's weight)
    over query rows and changeable keys (e^Δ in the worst case), an exact upper bound."""

    layer: int
    head: int
    beta: tuple[float, float]
    one_key: Fraction


@dataclass(frozen=True)
class StepRecord:
    """After one step: the largest change coefficient O (|Δy| ≤ O/(N − 1)) over rows and
    coordinates (exact), and the largest box width."""

    label: str
    other: Fraction
    width: float


@dataclass(frozen=True)
class RowResult:
    """One readout symbol (None: a mean readout or a BOS/EOS readout token): the logit's
    range over all n ≥ N₀ and K_tok (exact)."""

    symbol: str | None
    z_lo: float
    z_hi: float
    k_tok: Fraction


@dataclass(frozen=True)
class UniformPropagation:
    layout: Layout
    features: tuple[tuple[tuple[Fraction, Fraction], ...], ...]
    heads: tuple[HeadRecord, ...]
    steps: tuple[StepRecord, ...]
    rows: tuple[RowResult, ...]


def down_float(q: Fraction) -> float:
    """The largest float ≤ q."""
    f = float(q)
    return float(np.nextafter(f, -np.inf)) if Fraction(f) > q else f


def up_float(q: Fraction) -> float:
    """The smallest float ≥ q."""
    f = float(q)
    return float(np.nextafter(f, np.inf)) if Fraction(f) < q else f


def _rescale(x, frm: int, to: int):
    """x·2^(frm − to) for to ≥ frm, rounded up (exact unless the result is subnormal)."""
    if to == frm:
        return x
    return np.where(x > 0, B.up(np.ldexp(x, frm - to)), 0.0)


def _normal(x, ex: int):
    """(x′, ex′) with x′·2^ex′ ≥ x·2^ex and max x′ below :data:`_CEIL`."""
    mx = float(x.max()) if x.size else 0.0
    if mx <= _CEIL:
        return x, ex
    k = int(np.frexp(mx)[1]) - 200
    return _rescale(x, ex, ex + k), ex + k


def _add(a, ea: int, b, eb: int):
    e = max(ea, eb)
    return _normal(B.up(_rescale(a, ea, e) + _rescale(b, eb, e)), e)


def _exact(x: float, ex: int) -> Fraction:
    return Fraction(x) * Fraction(2) ** ex


def _beta(head, n0t: int) -> tuple[float, float]:
    """β(N) = coef·N^p over N ≥ N₀' for p ≤ 0: the constant, or the hull of 0 and β(N₀')."""
    t = head.temperature
    if t.n_power == 0:
        return float(t.coef), float(t.coef)
    lo, hi = B.ball(arb(float(t.coef)) * arb(n0t) ** arb(float(t.n_power)))
    return min(lo, 0.0), max(hi, 0.0)


def _pair_norms(rot, lo, hi):
    """Per rotary pair (k, k + dim/2), an upper bound on the pair's Euclidean norm over the
    row boxes, (rows, dim/2); the unrotated coordinates follow unchanged."""
    h, e = rot.dim // 2, rot.dim
    a = B.absmax(lo[:, :h], hi[:, :h])
    b = B.absmax(lo[:, h:e], hi[:, h:e])
    return B.up(np.sqrt(B.up(B.up(a * a) + B.up(b * b))))


def _rotated_dots(rot, q, k):
    """(Nq, Nk) enclosures of β·q_j·R(φ)k_w for **every** angle φ: the relative offset
    j − i of a query and a key ranges over all integers as N grows, so per pair the term
    q_pᵀR(φ)k_p can be anything in [−|q_p||k_p|, |q_p||k_p|] (R a rotation); the unrotated
    coordinates' dot is exact up to rounding."""
    e = rot.dim
    lo, hi = B.dots(q[0][:, e:], q[1][:, e:], k[0][:, e:], k[1][:, e:])
    pair = B.pmat_up(_pair_norms(rot, *q), _pair_norms(rot, *k).T)
    return B.dn(lo - pair), B.up(hi + pair)


def _rotation_free(rot, x):
    """|x| per coordinate made valid for every rotation of the pairs: both coordinates of
    a pair get the pair's norm bound (|(R x)_a| ≤ ‖x_p‖₂), the others keep |x|. ``x`` holds
    non-negative bounds (rows, d)."""
    if rot is None:
        return x
    h, e = rot.dim // 2, rot.dim
    a, b = x[:, :h], x[:, h:e]
    r = B.up(np.sqrt(B.up(B.up(a * a) + B.up(b * b))))
    return np.concatenate([r, r, x[:, e:]], axis=1)


def _scores(hd, lay: Layout, valid):
    """(R, C) score intervals: query rows × key classes, the union over the key's tokens —
    a single-position query class's own column uses its own token only. A rotary head's
    scores hold for every rotation (:func:`_rotated_dots`)."""
    bq = B.imul(*hd["q"], np.float64(hd["beta"][0]), np.float64(hd["beta"][1]))
    if hd["rot"] is None:
        lo, hi = B.dots(*bq, *hd["k"])
    else:
        lo, hi = _rotated_dots(hd["rot"], bq, hd["k"])
    c, kk = valid.shape
    ok = np.broadcast_to(valid[None], (c * kk, c, kk)).copy()
    rows = np.arange(c * kk)
    cls = rows // kk
    single = np.array([x.singleton for x in lay.classes])[cls]
    ok[rows[single], cls[single], :] = False
    ok[rows[single], cls[single], (rows % kk)[single]] = valid.ravel()[single]
    return (
        np.where(ok, lo.reshape(c * kk, c, kk), np.inf).min(axis=2),
        np.where(ok, hi.reshape(c * kk, c, kk), -np.inf).max(axis=2),
    )


def _weights(s_lo, s_hi, lay: Layout, row_ok):
    """Per query row j, in arb: A[j][w] ≥ (N − 1)·a_jw for the changeable key classes w
    (None elsewhere) and E[j, s] ≥ a_js for the single-position classes s (0 elsewhere),
    for every N ≥ N₀' (module docstring)."""
    cl = lay.classes
    f = [count_fraction(c, lay) for c in cl]
    r, nc = s_lo.shape
    a_arb: list[list[arb | None]] = [[None] * nc for _ in range(r)]
    e_mat = np.zeros((r, nc))
    for j in range(r):
        if not row_ok[j]:
            continue
        m = arb(float(np.max(s_hi[j])))
        up_ = [(arb(float(s_hi[j, c])) - m).exp() for c in range(nc)]
        lo_ = [(arb(float(s_lo[j, c])) - m).exp().lower() for c in range(nc)]
        d = lo_[0]
        for x in lo_[1:]:
            d = d.min(x)  # min_v L_v (exact points)
        mix = sum((Q.to_arb(fc) * lo_[c] for c, fc in enumerate(f) if fc > 0), arb(0))
        d = d.max(mix.lower())
        for c in range(nc):
            if cl[c].changeable:
                a_arb[j][c] = up_[c] / d
            if cl[c].singleton:
                e_mat[j, c] = min(1.0, B.ball(up_[c] / (up_[c] + (lay.n0_tokens - 1) * d))[1])
    B.finite(e_mat)
    return a_arb, e_mat


def _head(head, u, o_in, ex_in: int, lay: Layout, valid):
    """One head: its output box per row (R, d); its change coefficient per row, stored
    with an exponent; the changed position's own change per class; the largest one-key
    factor (exact)."""
    beta = _beta(head, lay.n0_tokens)
    rot = head.rotary
    hd = H._head(replace(head, rotary=None) if rot is not None else head, *u, beta)
    hd["rot"] = rot  # q and k unrotated: every use below holds for every rotation
    s_lo, s_hi = _scores(hd, lay, valid)
    row_ok = valid.ravel()
    old = ctx.prec
    ctx.prec = 80
    try:
        a_arb, e_mat = _weights(s_lo, s_hi, lay, row_ok)
        live = [x for row in a_arb for x in row if x is not None]
        a_max = max((Q.from_arb_upper(x) for x in live), default=Fraction(0))
        ex = ex_in
        if a_max > 2**200:
            ex = max(ex, a_max.numerator.bit_length() - a_max.denominator.bit_length() - 200)
        scale = arb(2) ** (-ex)
        a_mat = np.array(
            [[0.0 if x is None else B.ball(x * scale)[1] for x in row] for row in a_arb]
        )
    finally:
        ctx.prec = old
    B.finite(a_mat)
    c, kk = valid.shape
    v_lo, v_hi = H._hull(valid, *hd["v"])  # (C, d) per key class
    m_lo, m_hi = v_lo.min(axis=0), v_hi.max(axis=0)  # every key is visible
    single = np.array([x.singleton for x in lay.classes])
    h_lo = np.broadcast_to(m_lo, (c * kk, len(m_lo)))
    h_hi = np.broadcast_to(m_hi, (c * kk, len(m_hi)))
    if (~single).any() and single.any():  # the single-position classes' weights are small
        mid_lo, mid_hi = v_lo[~single].min(axis=0), v_hi[~single].max(axis=0)
        gain_hi = np.maximum(B.up(v_hi[single] - mid_hi), 0.0)  # (S, d)
        gain_lo = np.maximum(B.up(mid_lo - v_lo[single]), 0.0)
        es = e_mat[:, single]
        top = B.up(mid_hi + B.pmat_up(es, gain_hi))
        bot = B.dn(mid_lo - B.pmat_up(es, gain_lo))
        h_lo, h_hi = np.maximum(h_lo, bot), np.minimum(h_hi, top)
    out = B.iadd(h_lo, h_hi, *hd["bias"])
    # the change coefficient at query rows j ≠ i: one key, then the others' drift
    spread = np.maximum(np.maximum(B.up(v_hi - m_lo[None]), B.up(m_hi[None] - v_lo)), 0.0)
    one = B.up(B.up(a_mat[:, :, None] * spread[None]).max(axis=1))  # (R, d), scale 2^ex
    du_key = H._pmax(valid, o_in)  # (C, d), scale 2^ex_in
    dv = B.pmat_up(du_key, hd["mabs"].T).max(axis=0)
    dk = B.pmat_up(du_key, hd["wk"].T).max(axis=0)
    dq = B.pmat_up(o_in, hd["wq"].T)
    # |Δ(qᵀRk)| ≤ Σ_pairs (‖Δq_p‖|k_p| + |q_p|‖Δk_p‖), and ‖Δx_p‖ ≤ Δx_a + Δx_b: so the
    # coordinate bounds of |k| and |q| become their pairs' norm bounds
    kabs = _rotation_free(rot, B.absmax(*H._hull(valid, *hd["k"]))).max(axis=0)
    qabs = _rotation_free(rot, B.absmax(*hd["q"]))
    b_abs = max(abs(beta[0]), abs(beta[1]))
    eps = B.up(B.up(B.psum_up(B.up(dq * kabs[None])) + B.psum_up(B.up(qabs * dk[None]))) * b_abs)
    width = B.up(m_hi - m_lo)
    drift = B.up(dv[None] + B.up(B.up(2.0 * eps)[:, None] * width[None]))
    other = np.where(row_ok[:, None], B.up(one + _rescale(drift, ex_in, ex)), 0.0)
    o_lo, o_hi = H._hull(valid, *out)
    self_ = B.up(o_hi - o_lo)
    B.finite(other, self_, *out)
    other, ex = _normal(other, ex)
    return out, other, ex, self_, a_max


def _sphere_norm(model: Model):
    last = model.layers[-1] if model.layers else None
    norm = model.final_norm
    if norm is None and last is not None and not last.pre_norm:
        norm = last.norm2 if last.norm2 is not None else (last.norm1 if last.ffn is None else None)
    return norm


def propagate_uniform(
    model: Model, n0: int, bins: int = 1, n_parity: int | None = None
) -> UniformPropagation:
    """The length-uniform propagation (module docstring) with M = ``bins`` relative-position
    bins, over the lengths N ≥ N₀' (of parity ``n_parity`` when given). Raises :class:`UnsupportedError` naming the failed hypothesis when Lemma 5 does
    not apply, and :class:`attncert.kernel.core.bounds.Undecided` when a box overflows
    float64."""
    bad = hypotheses(model)
    if bad:
        raise UnsupportedError("outside Lemma 5's hypotheses: " + "; ".join(bad))
    model.require_classic(
        "the length-uniform propagation (attncert.kernel.uniform.propagate)", SUPPORTED
    )
    lay = layout(model, n0, bins, n_parity)
    feats = feature_ranges(model, lay)
    emb = model.embedding
    d = model.d
    cl = lay.classes
    kk = max(len(c.tokens) for c in cl)
    valid = np.array([[t < len(c.tokens) for t in range(kk)] for c in cl])
    ids = np.array([[c.tokens[min(t, len(c.tokens) - 1)] for t in range(kk)] for c in cl])
    pos = np.zeros((len(cl), d)), np.zeros((len(cl), d))
    used = used_features(model)
    if used:
        phi_lo = np.array([[down_float(lo) for lo, _ in row] for row in feats])
        phi_hi = np.array([[up_float(hi) for _, hi in row] for row in feats])
        pos = B.lin(phi_lo, phi_hi, emb.pos_weight[:, list(used)])
    y = B.iadd(emb.word[ids], emb.word[ids], pos[0][:, None], pos[1][:, None])
    box = (y[0].reshape(-1, d), y[1].reshape(-1, d))
    other, ex = np.zeros((len(cl) * kk, d)), 0  # |Δy| ≤ other·2^ex/(N − 1)
    changeable = np.array([c.changeable for c in cl])
    h_lo, h_hi = H._hull(valid, *box)
    selfc = np.where(changeable[:, None], B.up(h_hi - h_lo), 0.0)
    steps: list[StepRecord] = []
    heads: list[HeadRecord] = []
    ok = valid.ravel()

    def record(label: str) -> None:
        width = B.up(box[1] - box[0])[ok]
        steps.append(StepRecord(label, _exact(float(other[ok].max()), ex), float(width.max())))

    record("embedding")
    for li, layer in enumerate(model.layers):
        pre = layer.pre_norm
        x0 = (box, other, ex, selfc)  # a parallel layer's FFN reads the layer input
        if pre and layer.norm1 is not None:
            u, u_o, _ = _norm(layer.norm1, valid, box, other)
        else:
            u, u_o = box, other
        u_o, u_ex = _normal(u_o, ex)
        att = (np.zeros_like(box[0]), np.zeros_like(box[0]))
        att_o, att_ex, att_s = np.zeros_like(other), u_ex, np.zeros((len(cl), d))
        for hi_, head in enumerate(layer.heads):
            out, ch_o, ch_ex, ch_s, one = _head(head, u, u_o, u_ex, lay, valid)
            heads.append(HeadRecord(li + 1, hi_ + 1, _beta(head, lay.n0_tokens), one))
            att = B.iadd(*att, *out)
            att_o, att_ex = _add(att_o, att_ex, ch_o, ch_ex)
            att_s = B.up(att_s + ch_s)
        if layer.residual:
            box, selfc = B.iadd(*box, *att), B.up(selfc + att_s)
            other, ex = _add(other, ex, att_o, att_ex)
        else:
            box, other, ex, selfc = att, att_o, att_ex, att_s
        record(f"layer {li + 1} attention")
        if not pre and layer.norm1 is not None:
            box, other, selfc = _norm(layer.norm1, valid, box, other, selfc)
            other, ex = _normal(other, ex)
            record(f"layer {li + 1} norm1")
        if layer.ffn is not None:
            # parallel (pre-norm, residual): y + attn(LN₁y) + FFN(LN₂y), y the layer input
            same = layer.residual and not layer.parallel and not (pre and layer.norm2 is not None)
            src_box, src_o, src_ex, src_s = x0 if layer.parallel else (box, other, ex, selfc)
            if pre and layer.norm2 is not None:
                f_in, f_o, f_s = _norm(layer.norm2, valid, src_box, src_o, src_s)
            else:
                f_in, f_o, f_s = src_box, src_o, src_s
            f_box, f_o, f_s = _ffn(layer.ffn, valid, f_in, f_o, f_s, same)
            f_o, f_ex = _normal(f_o, src_ex)
            if layer.residual and not same:
                box, selfc = B.iadd(*box, *f_box), B.up(selfc + f_s)
                other, ex = _add(other, ex, f_o, f_ex)
            else:
                box, other, ex, selfc = f_box, f_o, f_ex, f_s
            record(f"layer {li + 1} ffn")
        if not pre and layer.norm2 is not None:
            box, other, selfc = _norm(layer.norm2, valid, box, other, selfc)
            other, ex = _normal(other, ex)
            record(f"layer {li + 1} norm2")
    if model.final_norm is not None:
        box, other, selfc = _norm(model.final_norm, valid, box, other, selfc)
        other, ex = _normal(other, ex)
        record("final norm")
    w, bias = model.readout.weight, np.array([model.readout.bias])
    norm = _sphere_norm(model)
    sph = B.sphere(norm, w, model.readout.bias) if norm is not None else None

    def logit(f_lo, f_hi, f_ch):
        z = B.lin(f_lo[None], f_hi[None], w[None], bias)
        z_lo, z_hi = float(z[0][0, 0]), float(z[1][0, 0])
        if sph is not None:
            z_lo, z_hi = max(z_lo, sph[0]), min(z_hi, sph[1])
        k = float(B.pmat_up(f_ch[None], np.abs(w)[:, None])[0, 0])
        B.finite(np.array([z_lo, z_hi, k]))
        return z_lo, z_hi, _exact(k, ex)

    rows: list[RowResult] = []
    if lay.readout is None:  # mean readout: the hull of every class, (max O + self)/(N − 1)
        f_lo, f_hi = box[0][ok].min(axis=0), box[1][ok].max(axis=0)
        worst = _rescale(selfc[changeable].max(axis=0), 0, ex) if ex >= 0 else None
        if worst is None:  # (never: exponents only grow from 0)
            raise B.Undecided("negative coefficient exponent")
        f_ch = B.up(other[ok].max(axis=0) + worst)
        rows.append(RowResult(None, *logit(f_lo, f_hi, f_ch)))
    else:
        alphabet = {model.token_index[s] for s in model.alphabet}
        for t, tok in enumerate(cl[lay.readout].tokens):
            row = lay.readout * kk + t
            sym = model.embedding.vocab[tok] if tok in alphabet else None
            rows.append(RowResult(sym, *logit(box[0][row], box[1][row], other[row])))
    return UniformPropagation(lay, feats, tuple(heads), tuple(steps), tuple(rows))
