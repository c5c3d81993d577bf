"""The feed-forward block over boxes, in centred (mean-value) form.

For f(x) = W₂ act(W₁x + b₁) + b₂ (plus x when the residual adds the block's own input) and
a box [c − r, c + r], every f(x) equals f(c) + J(ξ)(x − c) with J(ξ) = [I +] W₂ diag(s) W₁ and
s ∈ [s_lo, s_hi] the range of act′ over the box's pre-activations (mean value theorem per
output coordinate; ReLU's Clarke form). Writing s = s_mid + t, |t| ≤ s_rad:

    |J(ξ)| ≤ |fl(J_mid)|(1 + 2u) + |W₂| diag(s_rad + g|s_mid|) |W₁| (1 + g)  =: J⁺,

the float product fl(J_mid) = [I +] W₂ (s_mid ⊙ W₁) carrying its γ-bound g (see
:mod:`.rigorous`). So f(x) ∈ f(c) ± J⁺r, and |f(x) − f(x′)| ≤ J⁺|x − x′| for x, x′ in the
box. Unlike the plain interval map (|W₂| diag(S) |W₁| r), J⁺ keeps the cancellations of
W₂ diag(s) W₁ (and of I + …), which is what keeps boxes narrow when few tokens vary. The
result is intersected with the plain interval map, so it is never worse.

A gated block f(x) = W₂(act(g) ⊙ u) + b₂, g = W_g x + b_g, u = W₁x + b₁ (SwiGLU, GeGLU) has
J(ξ) = [I +] W₂ (diag(act′(g)⊙u) W_g + diag(act(g)) W₁) = [I +] [W₂ W₂] diag(s) [W_g; W₁]
with s = (act′(g)⊙u, act(g)) ranging over the box S of the interval products over the
pre-activation boxes: the same form with the stacked matrices (length 2·d_ff), so the same
J⁺ applies. Its hidden box is the interval product act(G) ⊙ U.
"""

from __future__ import annotations

import numpy as np

from attncert.model.spec import FeedForward
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.pointwise import act_range, act_slope_range


def hidden(ffn: FeedForward, lo: np.ndarray, hi: np.ndarray):
    """Box of the hidden layer (act(W₁x + b₁), or act(g) ⊙ u when gated) over x ∈ [lo, hi]."""
    a = act_range(
        ffn.activation,
        *R.affine(lo, hi, ffn.w_gate if ffn.gated else ffn.w1, ffn.b_gate if ffn.gated else ffn.b1),
    )
    if not ffn.gated:
        return a
    return R.mul(*a, *R.affine(lo, hi, ffn.w1, ffn.b1))


def factors(ffn: FeedForward, lo: np.ndarray, hi: np.ndarray):
    """(W_left (d, m), s_lo, s_hi (rows, m), W_right (m, d)) with J(ξ) = [I +] W_left
    diag(s) W_right and s ∈ [s_lo, s_hi] for every ξ in the box [lo, hi] (module docstring)."""
    if not ffn.gated:
        s_lo, s_hi = act_slope_range(ffn.activation, *R.affine(lo, hi, ffn.w1, ffn.b1))
        return ffn.w2, s_lo, s_hi, ffn.w1
    g = R.affine(lo, hi, ffn.w_gate, ffn.b_gate)
    u = R.affine(lo, hi, ffn.w1, ffn.b1)
    d_lo, d_hi = R.mul(*act_slope_range(ffn.activation, *g), *u)
    a_lo, a_hi = act_range(ffn.activation, *g)
    return (
        np.concatenate([ffn.w2, ffn.w2], axis=1),
        np.concatenate([d_lo, a_lo], axis=-1),
        np.concatenate([d_hi, a_hi], axis=-1),
        np.concatenate([ffn.w_gate, ffn.w1], axis=0),
    )


def jacobian_bound(ffn: FeedForward, lo, hi, residual: bool) -> np.ndarray:
    """J⁺ (rows, d, d) for input boxes (rows, d) (module docstring)."""
    w2, s_lo, s_hi, w1 = factors(ffn, lo, hi)
    s_mid = 0.5 * s_lo + 0.5 * s_hi
    s_rad = np.maximum(R.up(s_hi - s_mid), R.up(s_mid - s_lo))
    g = R.gamma(w1.shape[0] + 1)
    jm = np.einsum("ik,rkj->rij", w2, s_mid[:, :, None] * w1)
    if residual:
        jm = jm + np.eye(w1.shape[1])[None]
    slack = R.up(s_rad + R.up(g * np.abs(s_mid)))
    err = np.einsum("ik,rkj->rij", np.abs(w2), slack[:, :, None] * np.abs(w1))
    return R.up(R.up(np.abs(jm) * (1.0 + 4 * R.U)) + R.up(err * (1.0 + g) + R.ETA))


def apply_abs(jplus: np.ndarray, v: np.ndarray) -> np.ndarray:
    """J⁺ v (rows) for non-negative v, rounded up."""
    return R.up(np.einsum("rij,rj->ri", jplus, v) * (1.0 + R.gamma(v.shape[-1])) + R.ETA)


def ffn_box(ffn: FeedForward, lo: np.ndarray, hi: np.ndarray, residual: bool):
    """(out_lo, out_hi, J⁺): the box of f (plus the input when ``residual``) over row boxes
    [lo, hi], the intersection of the centred form and the plain interval map."""
    plain = R.affine(*hidden(ffn, lo, hi), ffn.w2, ffn.b2)
    if residual:
        plain = R.add(lo, hi, *plain)
    c, rad = R.mid_rad(lo, hi)
    f_c = R.affine(*hidden(ffn, c, c), ffn.w2, ffn.b2)
    if residual:
        f_c = R.add(c, c, *f_c)
    jplus = jacobian_bound(ffn, lo, hi, residual)
    width = apply_abs(jplus, rad)
    centred = R.down(f_c[0] - width), R.up(f_c[1] + width)
    out = np.maximum(plain[0], centred[0]), np.minimum(plain[1], centred[1])
    R.finite(*out, what="feed-forward bound")
    return out[0], out[1], jplus
