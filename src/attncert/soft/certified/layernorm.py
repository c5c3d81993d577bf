"""LayerNorm over boxes: a certified variance lower bound, the output box and the
Lipschitz constant it gives (guide ``certified-soft-attention.md``, "Models people train").

LN(y) = γ ⊙ (y − μ(y)) / √(σ²(y) + ε) + β on each position. For y in a box [lo, hi]:

* the centred coordinate c_k = y_k − μ(y) is linear in y, so its exact range is
  C_k = [lo_k − (lo_k + Σ_{l≠k} hi_l)/d, hi_k − (hi_k + Σ_{l≠k} lo_l)/d];
* σ² = (1/d) Σ c_k² ≥ V_lo = (1/d) Σ_k dist(0, C_k)² and ≤ V_hi = (1/d) Σ_k max C_k²;
* the normalised coordinate n_k = c_k/√(σ² + ε) lies in C_k·[1/√(V_hi+ε), 1/√(V_lo+ε)]
  and, because Σ c = 0, in [−√(d−1), √(d−1)];
* the Jacobian of n is s·(I − 11ᵀ/d − nnᵀ/d), s = 1/√(σ² + ε), whose spectral norm is
  ≤ s (the bracket is a projection minus a rank-one term of norm ‖n‖²/d ≤ 1). Along the
  segment between two points of the box (the box is convex) s ≤ s_max = 1/√(V_lo + ε),
  so ‖n(y) − n(y′)‖₂ ≤ s_max ‖y − y′‖₂, and coordinate-wise
  |Δn_k| ≤ s_max (δ_k + Σδ/d + N_k (N·δ)/d) with N_k = max|n_k| over the box.

* whatever the input, a linear readout w·LN(y) + b lies within √d·‖a − ā1‖₂ of
  w·β + b, a = w ⊙ γ: Σ n = 0 and ‖n‖² = dσ²/(σ² + ε) < d, so a·n = (a − ā1)·n
  (:func:`sphere_range`; also for a mean of LN outputs, the set being convex).

RMSNorm (``norm.rms``), RMS(y) = γ ⊙ y/√(m(y) + ε) + β with m = (1/d) Σ y², is the same
without centring: c_k = y_k ranges over [lo_k, hi_k] exactly, m ≥ V_lo = (1/d) Σ_k
dist(0, [lo_k, hi_k])² (0 for a coordinate whose interval straddles 0) and ≤ V_hi =
(1/d) Σ_k max(lo_k², hi_k²); n_k = y_k s ∈ [lo_k, hi_k]·[1/√(V_hi+ε), 1/√(V_lo+ε)] and
|n_k| ≤ ‖n‖ < √d. The Jacobian is s·(I − nnᵀ/d) (∂s/∂y_l = −s³y_l/d), of spectral
norm ≤ s since ‖n‖²/d = m/(m + ε) < 1, so |Δn_k| ≤ s_max(δ_k + N_k (N·δ)/d) (no Σδ/d
term) and ‖Δn‖₂ ≤ s_max‖δ‖₂. A readout of an RMSNorm output has no Σn = 0: w·RMS(y) + b
lies within ‖w ⊙ γ‖₂·√d of w·β + b.

When V_lo = 0 (the box contains a constant vector) only ε bounds the constant —
s_max = 1/√ε, about 316 for ε = 10⁻⁵ — and :class:`LNStep` records that, so reports
can say that LayerNorm is what makes a bound loose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.model.spec import LayerNorm
from attncert.soft.certified import rigorous as R


@dataclass(frozen=True)
class LNStep:
    """What one LayerNorm did to the bounds (per position arrays summarised)."""

    where: str
    var_lo_min: float  # smallest certified variance lower bound over positions
    lipschitz_max: float  # largest max|γ|·s_max over positions
    eps_only: bool  # some position's variance bound is 0: only ε limits the constant
    kind: str = "LayerNorm"  # or "RMSNorm" (its "variance" is the mean square)


def ln_box(norm: LayerNorm, lo: np.ndarray, hi: np.ndarray):
    """Output box of LN over input boxes (rows), and the per-row data the change step
    needs: (out_lo, out_hi, s_max (rows,), n_abs (rows, d), var_lo (rows,))."""
    d = lo.shape[-1]
    if norm.rms:  # no centring: the coordinate itself
        c_lo, c_hi = lo, hi
    else:
        s_hi, s_lo = R.sum_upper(hi), R.sum_lower(lo)  # S_hi ≥ Σ hi, S_lo ≤ Σ lo
        # C_k lower end: lo_k − (lo_k + Σ_{l≠k} hi_l)/d with Σ_{l≠k} hi_l ≤ S_hi − hi_k
        t = R.up(R.up(R.up(s_hi[..., None] - hi) + lo) / d)
        c_lo = R.down(lo - t)
        t = R.down(R.down(R.down(s_lo[..., None] - lo) + hi) / d)
        c_hi = R.up(hi - t)
    dist = np.maximum(np.maximum(c_lo, -c_hi), 0.0)
    var_lo = np.maximum(R.down(R.sum_down(R.down(dist * dist)) / d), 0.0)
    big = np.maximum(np.abs(c_lo), np.abs(c_hi))
    var_hi = R.up(R.sum_up(R.up(big * big)) / d)
    eps = norm.eps
    s_max = R.up(1.0 / R.sqrt_bounds(R.down(var_lo + eps), R.down(var_lo + eps))[0])
    s_min = R.down(1.0 / R.sqrt_bounds(R.up(var_hi + eps), R.up(var_hi + eps))[1])
    n_lo, n_hi = R.mul(c_lo, c_hi, s_min[..., None], s_max[..., None])
    cap = float(R.up(np.sqrt(float(d) if norm.rms else float(max(d - 1, 0)))))
    n_lo, n_hi = np.maximum(n_lo, -cap), np.minimum(n_hi, cap)
    g = norm.weight
    o_lo, o_hi = R.mul(n_lo, n_hi, g, g)
    o_lo, o_hi = R.add(o_lo, o_hi, norm.bias, norm.bias)
    R.finite(o_lo, o_hi, s_max, what="LayerNorm bound")
    return o_lo, o_hi, s_max, R.abs_max(n_lo, n_hi), var_lo


def ln_change(
    norm: LayerNorm, delta: np.ndarray, s_max: np.ndarray, n_abs: np.ndarray
) -> np.ndarray:
    """Coordinate-wise bound on |LN(y) − LN(y′)| from |y − y′| ≤ delta (rows), y, y′ in
    the box that gave ``s_max`` and ``n_abs`` (module docstring)."""
    d = delta.shape[-1]
    l2 = R.sqrt_bounds(R.sum_up(R.up(delta * delta)), R.sum_up(R.up(delta * delta)))[1]
    coord = delta if norm.rms else R.up(delta + R.up(R.sum_up(delta) / d)[..., None])
    inner = R.up(R.sum_up(R.up(n_abs * delta)) / d)
    coord = R.up(coord + R.up(n_abs * inner[..., None]))
    bound = np.minimum(coord, l2[..., None])
    out = R.up(R.up(bound * s_max[..., None]) * np.abs(norm.weight))
    R.finite(out, what="LayerNorm change bound")
    return out


def last_norm(model) -> LayerNorm | None:
    """The LayerNorm whose output the readout reads, if any (final norm, or a post-norm
    last layer ending in its norm)."""
    if model.final_norm is not None:
        return model.final_norm
    if not model.layers or model.layers[-1].pre_norm:
        return None
    last = model.layers[-1]
    if last.norm2 is not None:
        return last.norm2
    return last.norm1 if last.ffn is None else None


def sphere_range(norm: LayerNorm, w: np.ndarray, b: float) -> tuple[float, float]:
    """[lo, hi] ∋ w·LN(y) + b (or w·RMS(y) + b) for every y (module docstring)."""
    d = len(w)
    a_lo, a_hi = R.mul(w, w, norm.weight, norm.weight)
    if norm.rms:  # |a·n| ≤ ‖a‖₂‖n‖₂ < ‖a‖₂√d
        a_abs = R.abs_max(a_lo, a_hi)
        rad = R.up(
            R.sqrt_bounds(*[R.sum_up(R.up(a_abs * a_abs))] * 2)[1]
            * R.sqrt_bounds(float(d), float(d))[1]
        )
        c_lo, c_hi = R.affine(norm.bias[None], norm.bias[None], w[None], np.array([b]))
        return float(R.down(c_lo[0, 0] - rad)), float(R.up(c_hi[0, 0] + rad))
    m_lo, m_hi = R.down(R.sum_lower(a_lo) / d), R.up(R.sum_upper(a_hi) / d)
    dev = np.maximum(R.up(a_hi - m_lo), R.up(m_hi - a_lo))
    rad = R.up(
        R.sqrt_bounds(*[R.sum_up(R.up(dev * dev))] * 2)[1] * R.sqrt_bounds(float(d), float(d))[1]
    )
    c_lo, c_hi = R.affine(norm.bias[None], norm.bias[None], w[None], np.array([b]))
    return float(R.down(c_lo[0, 0] - rad)), float(R.up(c_hi[0, 0] + rad))


def ln_summary(where: str, norm: LayerNorm, s_max: np.ndarray, var_lo: np.ndarray) -> LNStep:
    g = float(np.max(np.abs(norm.weight))) if norm.weight.size else 0.0
    return LNStep(
        where=where,
        var_lo_min=float(np.min(var_lo)) if var_lo.size else 0.0,
        lipschitz_max=float(R.up(g * float(np.max(s_max)))) if s_max.size else 0.0,
        eps_only=bool(np.any(var_lo == 0)),
        kind="RMSNorm" if norm.rms else "LayerNorm",
    )
