"""The last layer at the readout query, by linear back-substitution (CROWN style).

When nothing non-linear sits between the last attention sublayer and the readout except
the feed-forward block (no LayerNorm after the last attention, no final norm, a single
readout position r), the logit is

    z = w·t + c·act(p) + w·b₂ + b,   t = y_r + Σ_h o_h,   p = W₁ t + b₁,   c = W₂ᵀ w.

For each hidden unit pick a slope s_k and enclose act(p) − s_k p ∈ [m_k, M_k] on the
certified range [l_k, u_k] of p_k (ReLU: the triangle, s = u/(u − l); GELU: the secant,
the offsets bounded by the slope range). Then with a = w + W₁ᵀ(c ⊙ s)

    a·t + K_L ≤ z ≤ a·t + K_U,

and the extremes of a·t = a·y_r + Σ_h a·o_h are *linear functionals of the attention
outputs*, bounded by an oracle: in layer 1 the exact fractional program
(:mod:`.fractional`) with values a·ṽ_w(τ); deeper, the weight-box LP of
:mod:`.attention` on the values a·ṽ_w. The ranges of p_k come from the same oracle
(rows W₁). For the change |z(x) − z(x^i)| every unit is either kept linear (it adds
|c_k|(M_k − m_k) and its slope to a) or bounded by its Lipschitz constant
|c_k|·S_k·|Δp_k|; then |a·Δt| ≤ |a|·Δy_r + Σ_h (one-key change of the functional a·o_h)
(:func:`attncert.soft.certified.attention.change_bound` with scalar values).
Float products carry their error bounds (:mod:`.rigorous`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attncert.model.spec import Activation, Layer, Model
from attncert.soft.certified import attention as A
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.fractional import first_layer_range
from attncert.soft.certified.pointwise import act_range, act_slope_range, act_value


def eligible(model: Model, r: int | None) -> bool:
    """Whether the readout is reached from the last attention without a LayerNorm (and
    the model uses no version-3 kind: the back-substitution knows ungated MLPs and
    unrotated heads only)."""
    if r is None or not model.layers or model.final_norm is not None or model.new_kinds:
        return False
    last = model.layers[-1]
    if not last.pre_norm and (last.norm1 is not None or last.norm2 is not None):
        return False
    return not (last.pre_norm and last.norm2 is not None and last.ffn is not None)


@dataclass(frozen=True, eq=False)
class HeadContext:
    """One head of the last layer, as the propagation saw it."""

    head: object
    hb: A.HeadBoxes
    l_w: np.ndarray  # (N, N) weight lower bounds
    u_w: np.ndarray  # (N, N) weight upper bounds
    vis: np.ndarray
    out_box: tuple[np.ndarray, np.ndarray]  # (N, d)
    opt: tuple | None = None  # layer 1: (u_opt box (N, K, d), valid (N, K))
    hb_opt: A.HeadBoxes | None = None  # layer 1: q, k boxes (N, K, ·) per allowed token


class Oracle:
    """Bounds on linear functionals C·o_h of head outputs at the readout query r (whose
    token is fixed: a single row)."""

    def __init__(self, ctxs, u_box, u_other, changeable, r: int, lp: bool, rows: A.Rows):
        self.ctxs, self.u_box, self.u_other = ctxs, u_box, u_other
        self.changeable, self.r, self.lp, self.rows = changeable, r, lp, rows
        self.option = int(np.argmax(rows.valid[r]))  # the readout token's (only) option
        self.row = r * rows.k + self.option

    def _projected(self, ctx: HeadContext, c: np.ndarray):
        """C·ṽ boxes per row (R, m), the head bias C·(W_O b_V + b_O), C·b_O, C W_O W_V."""
        h = ctx.head
        p_c, p_r = R.matmul_interval(c, h.w_o)
        cm_c, cm_r = R.matmul_interval_right(p_c, p_r, h.w_v)
        v = R.affine(*self.u_box, cm_c, None, cm_r)
        bias = R.affine(ctx.hb.bias[0][None], ctx.hb.bias[1][None], c)
        b_o = R.affine(ctx.hb.b_o[None], ctx.hb.b_o[None], c)
        return v, (bias[0][0], bias[1][0]), (b_o[0][0], b_o[1][0]), (cm_c, cm_r)

    def range(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[min, max] (m,) of Σ_h c·o_h at the readout query."""
        r, row = self.r, self.row
        total = (np.zeros(len(c)), np.zeros(len(c)))
        for ctx in self.ctxs:
            v, bias, b_o, cm = self._projected(ctx, c)
            if not ctx.vis[r].any():
                total = R.add(*total, *b_o)
                continue
            v_key = self.rows.hull(*v)
            lo, hi = A.average_range(
                ctx.l_w[row : row + 1], ctx.u_w[row : row + 1], *v_key, ctx.head.mask, self.lp,
                rows=[r],
            )  # fmt: skip
            lo, hi = lo[0], hi[0]
            if ctx.opt is not None:
                (uo_lo, uo_hi), valid = ctx.opt
                n, kk, d = uo_lo.shape
                vo = R.affine(uo_lo.reshape(-1, d), uo_hi.reshape(-1, d), cm[0], None, cm[1])
                hb = ctx.hb_opt
                f_lo, f_hi = first_layer_range(
                    hb.q,
                    hb.k,
                    (vo[0].reshape(n, kk, -1), vo[1].reshape(n, kk, -1)),
                    valid,
                    ctx.hb.beta,
                    ctx.head.mask,
                    np.array([r]),
                )
                f_lo, f_hi = f_lo[0, self.option], f_hi[0, self.option]
                lo = np.where(np.isfinite(f_lo), np.maximum(lo, f_lo), lo)
                hi = np.where(np.isfinite(f_hi), np.minimum(hi, f_hi), hi)
            total = R.add(*total, *R.add(lo, hi, *bias))
        return total

    def change(self, c: np.ndarray) -> np.ndarray:
        """Bound (m,) on |Σ_h c·(o_h(x) − o_h(x^i))| at the readout query."""
        total = np.zeros(len(c))
        for ctx in self.ctxs:
            v, bias, _, cm = self._projected(ctx, c)
            m_abs = R.up(np.abs(cm[0]) + cm[1])
            hb = dataclasses.replace(ctx.hb, v=v, bias=bias, m_abs=m_abs)
            zero = np.zeros((len(self.rows.pos), len(c)))
            hc = A.change_bound(
                hb,
                ctx.u_w,
                ctx.head.mask,
                ctx.vis,
                (zero, zero),
                self.changeable,
                self.u_other,
                self.rows,
            )
            total = R.up(total + hc.other[self.row])
        return total


def chord_slopes(act: Activation, l_: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per unit: the chord slope (f(u) − f(l))/(u − l) (ReLU: 0 or 1 when stable)."""
    if act is Activation.RELU:
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where((l_ < 0) & (u > 0), u / (u - l_), np.where(l_ >= 0, 1.0, 0.0))
        return s
    f_l, f_u = act_value(act, l_), act_value(act, u)
    width = u - l_
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(width > 0, (0.5 * (f_u[0] + f_u[1]) - 0.5 * (f_l[0] + f_l[1])) / width, 0.0)
    return np.where(np.isfinite(s), s, 0.0)


def offsets(act: Activation, s: np.ndarray, l_: np.ndarray, u: np.ndarray):
    """[g_lo, g_hi] ⊇ {act(p) − s p : p ∈ [l, u]} for any slopes s (per unit).

    ReLU is convex, so g's maximum is at an endpoint and its minimum at an endpoint or
    at the kink 0. Otherwise g′ ∈ [s_min − s, s_max − s] (the enclosure of act′), so g
    exceeds max(g(l), g(u)) by at most (u − l)·D₁D₂/(D₁ + D₂), D₁ = (s_max − s)⁺,
    D₂ = (s − s_min)⁺ (the two lines from the endpoints meet there), and symmetrically."""
    f_l, f_u = act_value(act, l_), act_value(act, u)
    g_l = (R.down(f_l[0] - R.up(s * l_)), R.up(f_l[1] - R.down(s * l_)))
    g_u = (R.down(f_u[0] - R.up(s * u)), R.up(f_u[1] - R.down(s * u)))
    big, small = np.maximum(g_l[1], g_u[1]), np.minimum(g_l[0], g_u[0])
    if act is Activation.RELU:
        kink = (l_ < 0) & (u > 0)
        return np.where(kink, np.minimum(small, 0.0), small), big
    sl, sh = act_slope_range(act, l_, u)
    d1, d2 = np.maximum(R.up(sh - s), 0.0), np.maximum(R.up(s - sl), 0.0)
    width = R.up(u - l_)
    with np.errstate(divide="ignore", invalid="ignore"):
        bump = np.where(d1 + d2 > 0, R.up(R.up(width * R.up(d1 * d2)) / R.down(d1 + d2)), 0.0)
    return R.down(small - bump), R.up(big + bump)


@dataclass(frozen=True)
class ReadoutBounds:
    z_lo: float
    z_hi: float
    change: float
    linear_units: int  # units kept linear in the change bound
    units: int
    change_linear: float = 0.0  # the |a·Δt| part of the change bound
    change_units: float = 0.0  # the per-unit part (relaxation gaps and Lipschitz terms)


def crown_readout(
    model: Model,
    layer: Layer,
    oracle: Oracle,
    y_box,  # (d,) box of y_r entering the last layer
    y_change: np.ndarray,  # (d,) |Δy_r| for a change elsewhere
    t_box,  # (d,) box of t = y_r + Σ o_h (from the box path)
    t_change: np.ndarray,  # (d,) |Δt| (from the box path)
) -> ReadoutBounds:
    """Range and one-position change of the logit by back-substitution (module docstring)."""
    w = model.readout.weight
    b = np.array([model.readout.bias])
    residual = 1.0 if layer.residual else 0.0
    yb = (y_box[0] * residual, y_box[1] * residual)
    yc = y_change * residual

    def linear_range(a: np.ndarray):
        """[min, max] of a·t over the readout's inputs, a (m, d)."""
        ylo, yhi = R.affine(np.broadcast_to(yb[0], (1, len(yb[0]))), yb[1][None], a)
        olo, ohi = oracle.range(a)
        return R.add(ylo[0], yhi[0], olo, ohi)

    def linear_change(a: np.ndarray):
        return R.up(R.nonneg_matmul_up(yc[None], np.abs(a).T)[0] + oracle.change(a))

    t_abs = R.abs_max(*t_box)
    ffn = layer.ffn
    if ffn is None:
        lo, hi = linear_range(w[None])
        lo, hi = R.add(lo, hi, b, b)
        return ReadoutBounds(float(lo[0]), float(hi[0]), float(linear_change(w[None])[0]), 0, 0)
    # pre-activation ranges p = W₁ t + b₁ (oracle on the rows of W₁)
    p_lo, p_hi = linear_range(ffn.w1)
    p_lo, p_hi = R.add(p_lo, p_hi, ffn.b1, ffn.b1)
    p_box = R.affine(t_box[0][None], t_box[1][None], ffn.w1, ffn.b1)
    p_lo, p_hi = np.maximum(p_lo, p_box[0][0]), np.minimum(p_hi, p_box[1][0])
    c_lo, c_hi = R.affine(w[None], w[None], ffn.w2.T)  # c = W₂ᵀ w, enclosed
    c_lo, c_hi = c_lo[0], c_hi[0]
    c = 0.5 * c_lo + 0.5 * c_hi
    c_err = np.maximum(R.up(c_hi - c), R.up(c - c_lo))
    a_lo, a_hi = act_range(ffn.activation, p_lo, p_hi)
    act_abs = R.abs_max(a_lo, a_hi)
    const_common = R.affine(ffn.b2[None], ffn.b2[None], w[None], b)  # w·b₂ + b
    c_err_term = float(R.nonneg_matmul_up(c_err[None], act_abs[:, None])[0, 0])

    def fold(cs: np.ndarray, sign: float):
        """a = sign·w + W₁ᵀ cs as a float vector and a bound on its error."""
        a_lo, a_hi = R.affine(cs[None], cs[None], ffn.w1.T, sign * w)
        a = 0.5 * a_lo[0] + 0.5 * a_hi[0]
        return a, np.maximum(R.up(a_hi[0] - a), R.up(a - a_lo[0]))

    def side(sign: float, slopes: np.ndarray) -> float:
        """Upper bound of sign·z with per-unit slopes (module docstring)."""
        cc = sign * c
        g_lo, g_hi = offsets(ffn.activation, slopes, p_lo, p_hi)
        cs = cc * slopes
        a, a_err = fold(cs, sign)
        t_hi = linear_range(a[None])[1][0]
        err_t = float(R.nonneg_matmul_up(a_err[None], t_abs[:, None])[0, 0])
        cb = R.affine(cs[None], cs[None], ffn.b1[None])[1][0, 0]  # (cc⊙s)·b₁
        g = R.sum_upper(np.where(cc >= 0, R.up(cc * g_hi), R.up(cc * g_lo)))
        k = const_common[1][0, 0] if sign > 0 else -const_common[0][0, 0]
        return float(R.up(t_hi + cb + g + k + c_err_term + err_t))

    chord = chord_slopes(ffn.activation, p_lo, p_hi)
    cands = [chord]
    if ffn.activation is Activation.RELU:
        unstable = (p_lo < 0) & (p_hi > 0)
        ada = np.where(unstable, (p_hi > -p_lo).astype(float), chord)
        cands += [ada, np.where(unstable, 0.0, chord), np.where(unstable, 1.0, chord)]

    def best(sign: float) -> float:
        out = np.inf
        for cand in cands:
            # units whose coefficient has the sign of the side keep the chord (the
            # tightest upper line); the others take the candidate's lower line
            slopes = np.where(sign * c >= 0, chord, cand)
            out = min(out, side(sign, slopes))
        return out

    z_hi = best(1.0)
    z_lo = -best(-1.0)
    s = chord
    g_lo, g_hi = offsets(ffn.activation, s, p_lo, p_hi)

    def fold_mask(mask):
        return fold(np.where(mask, c * s, 0.0), 1.0)

    # change: each unit either linear (slope s into a, residual |c|·min(gap, D·Δp)) or
    # Lipschitz (|c|·S·Δp); three assignments are tried, the least bound is kept
    dp = linear_change(ffn.w1)
    s_lo_k, s_hi_k = act_slope_range(ffn.activation, p_lo, p_hi)
    slope = R.abs_max(s_lo_k, s_hi_k)
    dev = np.maximum(R.up(s_hi_k - s), R.up(s - s_lo_k))  # sup |g′| for g = act − s·p
    lip_cost = R.up(R.up(np.abs(c) * slope) * dp)
    gap = R.up(np.abs(c) * np.minimum(R.up(g_hi - g_lo), R.up(dev * dp)))
    c_err_change = float(R.nonneg_matmul_up(c_err[None], R.up(slope * dp)[:, None])[0, 0])
    mixed = R.up(gap + R.up(np.abs(c * s) * dp)) < lip_cost
    best_change = None
    for lin in (np.ones_like(mixed), np.zeros_like(mixed), mixed):
        a2, a2_err = fold_mask(lin)
        dt_abs = float(R.nonneg_matmul_up(a2_err[None], t_change[:, None])[0, 0])
        lin_part = linear_change(a2[None])[0]
        unit_part = R.sum_up(np.where(lin, gap, lip_cost))
        total = float(R.up(lin_part + unit_part + dt_abs + c_err_change))
        if best_change is None or total < best_change[0]:
            best_change = (total, lin, lin_part, unit_part)
    change, lin, lin_part, unit_part = best_change
    R.finite(np.array([z_lo, z_hi, change]), what="readout bound")
    return ReadoutBounds(
        float(z_lo),
        float(z_hi),
        float(change),
        int(lin.sum()),
        len(lin),
        float(lin_part),
        float(unit_part),
    )
