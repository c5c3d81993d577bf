"""Affine forms in the free positions of a restriction (trusted; issue 15, Corollary 2's
soft analogue).

A restriction ρ fixes some input positions and leaves m *free*; a completion chooses a
symbol for each free position t. Against a base completion x⁰, the choice is a one-hot
vector x: x_{t,o} = 1 iff t carries the symbol o ≠ x⁰_t (A = |Σ| − 1 alternatives). Every
quantity the soft propagation tracks is held, per *row* (a token position together with
the token it carries), as an affine form in the *centred* choices x − x̄, x̄ = 1/|Σ|:

    value(x, ε) ∈ c + Σ_{t,o} G_{t,o}·(x_{t,o} − x̄) + Σ_s E_s·ε_s ± r

valid for every completion x and some ε ∈ [−1, 1]^e — the row's *private* error symbols,
which record where an earlier step's linearization error entered, so that later linear
maps can cancel them (DeepZ-style zonotopes). Centring halves the deviations of a binary
choice (x − ½ = ±½), which quarters every second-order remainder. A row never depends on
its own position's choice (the row fixes it), so its column group is zero. Over the
choices of one free position, Σ_o G_{t,o}(x_{t,o} − x̄) takes the A + 1 values −ḡ_t and
G_{t,o} − ḡ_t (ḡ_t = x̄·Σ_o G_{t,o}); deviations are bounded by the sum over free positions
of the largest of these, Σ_s |E_s| and r.

Soundness rests on three facts, used at every step:

1. the centre c and coefficients G, E are any float64 numbers; only the remainder r
   must be rigorous, and it is computed with outward rounding
   (:mod:`attncert.kernel.core.bounds`: a length-k dot product in any order errs by at
   most γ_k·|a|·|b|, Higham §3.1; a rounded coefficient's error, summed over the columns,
   bounds its effect on the value since every |x|, |ε| ≤ 1);
2. LayerNorm, by a first-order Taylor expansion of s(v) = (v + ε)^{−1/2} at the centre's
   variance v₀ with the Lagrange remainder ½s″(ξ)(v − v₀)², s″ ≤ ¾(v_lo + ε)^{−5/2} for a
   certified lower bound v_lo of the variance; every other term of u = z̃·s(v) is a
   product of two bounded deviations (:func:`layer_norm`); where the interval LayerNorm
   of the input's box is narrower (:func:`attncert.kernel.core.bounds.layernorm`), that
   box is kept;
3. an activation g by the mean value theorem: g(h) − g(c) = g′(ξ)(h − c) with g′(ξ) in
   the certified slope range [s_lo, s_hi] of g over the form's range, so
   g(h) = g(c) + λ(h − c) ± ½(s_hi − s_lo)|h − c| for λ the mid-slope (:func:`activation`;
   ReLU's difference quotients lie in its Clarke range).

Python::

    >>> import numpy as np
    >>> from attncert.kernel.soft.affine.forms import Form, affine_map, bounds
    >>> f = Form(np.zeros((1, 2)), np.ones((1, 2, 3, 1)), np.zeros((1, 2, 0)), np.zeros((1, 2)))
    >>> lo, hi = bounds(affine_map(f, np.array([[1.0, -1.0]]), np.array([0.5])))
    >>> float(lo[0, 0]) <= 0.5 <= float(hi[0, 0])
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.arith import enclose
from attncert.arith.filter import Enclosed
from attncert.kernel.core import bounds as B
from attncert.model.spec import Activation

__implements__ = ("Hahn Theorem 6",)

_U = 2.0**-53
_TINY = 2.0**-1000


@dataclass(frozen=True, eq=False)
class Form:
    """Affine forms of a block of rows (module docstring).

    ``c`` (R, k) centres; ``G`` (R, k, m, A) coefficients of the choices of the m free
    positions (A = |Σ| − 1 alternatives each); ``E`` (R, k, e) coefficients of each row's
    private error symbols; ``r`` (R, k) ≥ 0 remainders."""

    c: np.ndarray
    G: np.ndarray
    E: np.ndarray
    r: np.ndarray

    @property
    def rows(self) -> int:
        return self.c.shape[0]

    def take(self, idx) -> Form:
        """The rows ``idx`` (private symbols travel with their rows)."""
        return Form(self.c[idx], self.G[idx], self.E[idx], self.r[idx])


def point(mid: np.ndarray, rad: np.ndarray, m: int, a: int) -> Form:
    """Constant forms mid ± rad (R, k): no dependence on the free positions."""
    rows, k = mid.shape
    return Form(mid.copy(), np.zeros((rows, k, m, a)), np.zeros((rows, k, 0)), rad.copy())


def choices(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The A + 1 values of Σ_o G_{t,o}(x_{t,o} − x̄) over the choices of each free position
    (..., m, A + 1), and a bound (..., m) on their rounding."""
    a = g.shape[-1]
    mean = g.sum(axis=-1, keepdims=True) / (a + 1)
    vals = np.concatenate([-mean, g - mean], axis=-1)
    slack = B.up(B.g2(a + 2) * B.psum_up(np.abs(g), axis=-1)) if a else np.zeros(g.shape[:-1])
    return vals, slack


def gdev(g: np.ndarray) -> np.ndarray:
    """Upper bound of |Σ G·(x − x̄)| over the choices: Σ_t max over t's choices."""
    if g.shape[-2] == 0 or g.shape[-1] == 0:
        return np.zeros(g.shape[:-2])
    if g.shape[-1] == 1:  # a binary choice: x − ½ = ±½, and halving is exact
        return B.psum_up(np.abs(g[..., 0]) * 0.5, axis=-1)
    vals, slack = choices(g)
    return B.psum_up(B.up(np.abs(vals).max(axis=-1) + slack), axis=-1)


def neg_pos(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds of −min and max of Σ G·(x − x̄) over the choices (both ≥ 0)."""
    if g.shape[-2] == 0 or g.shape[-1] == 0:
        z = np.zeros(g.shape[:-2])
        return z, z
    if g.shape[-1] == 1:  # symmetric: ±½·G
        half = gdev(g)
        return half, half
    vals, slack = choices(g)
    neg = B.psum_up(B.up(np.maximum(-vals.min(axis=-1), 0.0) + slack), axis=-1)
    pos = B.psum_up(B.up(np.maximum(vals.max(axis=-1), 0.0) + slack), axis=-1)
    return neg, pos


def edev(e: np.ndarray) -> np.ndarray:
    """Upper bound of max |Σ E·ε| over ε ∈ [−1, 1]^e: Σ |E| (last axis)."""
    if e.shape[-1] == 0:
        return np.zeros(e.shape[:-1])
    return B.psum_up(np.abs(e), axis=-1)


def dev(f: Form) -> np.ndarray:
    """Upper bound of |value − c| over every completion (R, k)."""
    return B.up(B.up(gdev(f.G) + edev(f.E)) + f.r)


def _gsum(g: np.ndarray) -> np.ndarray:
    """Σ over all columns of |G| (upper): bounds Σ_t max_o of any per-coefficient error."""
    if g.shape[-2] == 0:
        return np.zeros(g.shape[:-2])
    return B.psum_up(np.abs(g).reshape(*g.shape[:-2], -1), axis=-1)


def coeff_mass(f: Form) -> np.ndarray:
    """|c| + Σ|G| + Σ|E| (upper): what the rounding of a linear map of ``f`` scales."""
    return B.up(B.up(np.abs(f.c) + _gsum(f.G)) + edev(f.E))


def bounds(f: Form) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lo, hi] of every entry over every completion."""
    neg, pos = neg_pos(f.G)
    rest = B.up(edev(f.E) + f.r)
    lo = B.dn(B.dn(f.c - neg) - rest)
    hi = B.up(B.up(f.c + pos) + rest)
    B.finite(lo, hi)
    return lo, hi


def affine_map(f: Form, w: np.ndarray, b: np.ndarray | None = None) -> Form:
    """Forms of value·Wᵀ + b (W, b exact float64). Rounding: each output entry is a
    length-(k+1) dot product, |error| ≤ γ·(|c| + Σ|G| + Σ|E|)·|W|ᵀ + |b| term."""
    k = w.shape[1]
    wa = np.abs(w).T
    c = f.c @ w.T
    if b is not None:
        c = c + b
    g = (
        np.einsum("rkma,jk->rjma", f.G, w)
        if f.G.size
        else np.zeros((f.rows, w.shape[0], *f.G.shape[2:]))
    )
    e = (
        np.einsum("rke,jk->rje", f.E, w)
        if f.E.size
        else np.zeros((f.rows, w.shape[0], f.E.shape[2]))
    )
    slack = B.pmat_up(coeff_mass(f), wa)
    if b is not None:
        slack = B.up(slack + np.abs(b))
    r = B.up(B.up(B.pmat_up(f.r, wa) + B.up(slack * B.g2(k + 1))) + _TINY)
    B.finite(r)
    return Form(c, g, e, r)


def shift(f: Form, mid: np.ndarray, rad: np.ndarray | float = 0.0) -> Form:
    """Forms of value + (mid ± rad)."""
    c = f.c + mid
    r = B.up(B.up(f.r + rad) + B.up(2 * _U * np.abs(c)) + _TINY)
    return Form(c, f.G, f.E, r)


def _pad(e: np.ndarray, slots: int) -> np.ndarray:
    if e.shape[-1] == slots:
        return e
    return np.concatenate([e, np.zeros((*e.shape[:-1], slots - e.shape[-1]))], axis=-1)


def add(f1: Form, f2: Form, shared: int | None = None) -> Form:
    """Forms of the sum. The first ``shared`` private symbols of ``f2`` are those of ``f1``
    (the same rows' symbols); the rest of ``f2``'s are new and appended after ``f1``'s.
    ``shared=None``: ``f2``'s symbols are a prefix of ``f1``'s layout (or vice versa)."""
    if shared is None:
        slots = max(f1.E.shape[-1], f2.E.shape[-1])
        e = _pad(f1.E, slots) + _pad(f2.E, slots)
    else:
        e1 = _pad(f1.E, max(f1.E.shape[-1], shared))
        head = e1[..., :shared] + f2.E[..., :shared]
        e = np.concatenate([head, e1[..., shared:], f2.E[..., shared:]], axis=-1)
    c = f1.c + f2.c
    g = f1.G + f2.G
    out = Form(c, g, e, f1.r)
    r = B.up(B.up(f1.r + f2.r) + B.up(2 * _U * coeff_mass(out)) + _TINY)
    return Form(c, g, e, r)


def extend(f: Form, rad: np.ndarray) -> Form:
    """Move a remainder ``rad`` (R, k) into k new private symbols of every row (diagonal)."""
    k = f.c.shape[1]
    new = rad[:, :, None] * np.eye(k)[None]
    return Form(f.c, f.G, np.concatenate([f.E, new], axis=-1), f.r)


def box_where(f: Form, bad: np.ndarray, mid: np.ndarray, rad: np.ndarray) -> Form:
    """Entries ``bad`` replaced by the constant form mid ± rad (a valid enclosure there)."""
    if not bad.any():
        return f
    c = np.where(bad, mid, f.c)
    g = np.where(bad[..., None, None], 0.0, f.G)
    e = np.where(bad[..., None], 0.0, f.E)
    r = np.where(bad, rad, f.r)
    return Form(c, g, e, r)


def layer_norm(f: Form, norm) -> Form:
    """Forms of LN(value) = γ ⊙ z̃·s(|z̃|²/d) + β, z̃ the centred value, s(v) = (v + ε)^{−1/2}
    (module docstring, fact 2); for RMSNorm z̃ is the value itself (no centring, β = 0 in
    the models, any β handled). The new remainder becomes new private symbols."""
    d = f.c.shape[1]
    if norm.rms:  # RMSNorm: no centring, z̃ = the value itself (v = mean of the squares)
        c, g, e, cen = f.c, f.G, f.E, f
    else:
        # centring P = I − 11ᵀ/d, applied to every part (rounding bounded); |P|r ≤ r + mean(r)
        c = f.c - f.c.mean(axis=1, keepdims=True)
        g = f.G - f.G.mean(axis=1, keepdims=True)
        e = f.E - f.E.mean(axis=1, keepdims=True)
        mass = coeff_mass(f)
        slack = B.up(B.g2(d + 2) * B.up(mass + B.up(B.psum_up(mass, axis=1) / d)[:, None]))
        r = B.up(B.up(f.r + B.up(B.psum_up(f.r, axis=1) / d)[:, None]) + slack)
        cen = Form(c, g, e, r)
    devv = dev(cen)  # |Δ_i| ≤ devv_i for the exact centred value c + Δ
    big_r = B.up(np.sqrt(B.psum_up(B.up(devv * devv), axis=1)))  # ‖Δ‖₂ ≤ R
    sq_up = B.psum_up(B.up(c * c), axis=1)  # ≥ |c|²
    sq_dn = B.psum_dn(np.maximum(B.dn(c * c), 0.0), axis=1)  # ≤ |c|²
    v0 = np.sum(c * c, axis=1) / d  # the expansion point: any float
    off_hi = np.maximum(B.up(B.up(sq_up / d) - v0), 0.0)  # |c|²/d − v0 ≤ off_hi
    off_lo = np.maximum(B.up(v0 - B.dn(sq_dn / d)), 0.0)  # v0 − |c|²/d ≤ off_lo
    # affine part of v − v0: a = (2/d)·c·(G x + E ε), coefficients rounded (a_err)
    two_d = 2.0 / d
    ag = np.einsum("rk,rkma->rma", c, g) * two_d
    ae = np.einsum("rk,rke->re", c, e) * two_d
    a_err = B.up(
        B.up(B.g2(d + 2) * B.up(two_d))
        * B.psum_up(B.up(np.abs(c) * B.up(_gsum(g) + edev(e))), axis=1)
    )
    a_neg, a_pos = neg_pos(ag)
    a_neg, a_pos = B.up(a_neg + edev(ae)), B.up(a_pos + edev(ae))
    cr = B.up(B.up(two_d) * B.psum_up(B.up(np.abs(c) * cen.r), axis=1))  # |(2/d)c·e|
    q_lo = B.up(B.up(off_lo + cr) + a_err)  # v − v0 − a ≥ −q_lo
    q_hi = B.up(B.up(B.up(off_hi + cr) + a_err) + B.up(B.up(big_r * big_r) / d))
    v_dn, v_up = B.up(a_neg + q_lo), B.up(a_pos + q_hi)  # v − v0 ∈ [−v_dn, v_up]
    v_max = np.maximum(v_dn, v_up)
    # lower bounds of the variance v (and of v0, the other end of the Lagrange interval)
    c_norm = B.dn(np.sqrt(sq_dn))
    gap = np.maximum(B.dn(c_norm - big_r), 0.0)
    v_low = np.maximum(np.maximum(B.dn(v0 - v_dn), 0.0), B.dn(B.dn(gap * gap) / d))
    v_low = np.minimum(v_low, v0)
    eps = float(norm.eps)
    # s0 = (v0 + ε)^{−1/2} and s1 = −½·s0³ enclosed; s″ ≤ ¾·(v_low + ε)^{−5/2}
    sq_lo, sq_hi = B.dn(np.sqrt(B.dn(v0 + eps))), B.up(np.sqrt(B.up(v0 + eps)))
    s0_lo, s0_hi = B.dn(1.0 / sq_hi), B.up(1.0 / sq_lo)
    s0 = 0.5 * (s0_lo + s0_hi)
    s0_err = np.maximum(B.up(s0_hi - s0), B.up(s0 - s0_lo))
    s1_lo = -B.up(0.5 * B.up(B.up(s0_hi * s0_hi) * s0_hi))
    s1_hi = -B.dn(0.5 * B.dn(B.dn(s0_lo * s0_lo) * s0_lo))
    s1 = 0.5 * (s1_lo + s1_hi)
    s1_err = np.maximum(B.up(s1_hi - s1), B.up(s1 - s1_lo))
    inv = B.up(1.0 / B.dn(np.sqrt(B.dn(v_low + eps))))
    inv2 = B.up(inv * inv)
    inv5 = B.up(B.up(inv2 * inv2) * inv)
    rho = B.up(B.up(0.375 * inv5) * B.up(v_max * v_max))
    tau = B.up(B.up(rho + s0_err) + B.up(s1_err * v_max))  # |s − s0 − s1(v − v0)| ≤ tau
    s1a = np.abs(s1)
    ds = B.up(B.up(s1a * v_max) + tau)  # |s − s0| ≤ ds
    q_max = np.maximum(q_lo, q_hi)
    # u = c·s0 + s0·Δ_aff + s1·c·a  +  [s0·e + s1·c·q + c·τ + Δ·(s − s0)]
    cu = c * s0[:, None]
    cs1 = c * s1[:, None]
    gu = g * s0[:, None, None, None] + cs1[:, :, None, None] * ag[:, None]
    eu = e * s0[:, None, None] + cs1[:, :, None] * ae[:, None]
    ac = np.abs(c)
    rem = B.up(cen.r * np.abs(s0)[:, None])
    rem = B.up(rem + B.up(ac * B.up(B.up(s1a * q_max) + tau)[:, None]))
    rem = B.up(rem + B.up(devv * ds[:, None]))
    moved = B.up(
        B.up(B.up(_gsum(g) + edev(e)) * np.abs(s0)[:, None])
        + B.up(B.up(ac * s1a[:, None]) * B.up(_gsum(ag[:, None]) + edev(ae[:, None])))
    )
    rem = B.up(B.up(rem + B.up(8 * _U * B.up(B.up(ac * np.abs(s0)[:, None]) + moved))) + _TINY)
    gam, beta = norm.weight, norm.bias
    ga = np.abs(gam)
    out = Form(cu * gam + beta, gu * gam[None, :, None, None], eu * gam[None, :, None], rem)
    out_rnd = B.up(4 * _U * B.up(coeff_mass(out) + np.abs(beta)))
    out = extend(
        Form(out.c, out.G, out.E, np.zeros_like(rem)),
        B.up(B.up(B.up(rem * ga) + out_rnd) + _TINY),
    )
    B.finite(out.E)
    # where the interval LayerNorm of the input's box (centred ranges, variance lower
    # bound, |n_i| ≤ √(d − 1)) is narrower than the form, keep that box
    o_lo, o_hi, _, _, _ = B.layernorm(norm, *bounds(f))
    mid, rad = B.centre(o_lo, o_hi)
    return box_where(out, dev(out) > rad, mid, rad)


def activation(f: Form, kind: str) -> Form:
    """Forms of g(value) for g = ReLU, GELU, tanh-GELU or SiLU (module docstring, fact 3)."""
    lo, hi = bounds(f)
    s_lo, s_hi = B.act_slopes(kind, lo, hi)
    lam = 0.5 * (s_lo + s_hi)
    spread = np.maximum(B.up(s_hi - lam), B.up(lam - s_lo))
    # g at the centres: the arith library's enclosure (arb-built Taylor tables, ≈ 10⁻¹⁴)
    g_at = enclose.activation(Activation(kind), Enclosed(f.c, np.zeros_like(f.c)))
    gc, g_err = g_at.mid, g_at.rad
    la = np.abs(lam)
    g = f.G * lam[..., None, None]
    e = f.E * lam[..., None]
    rnd = B.up(2 * _U * B.up(B.up(_gsum(g) + edev(e)) + np.abs(gc)))
    nonlin = B.up(B.up(spread * dev(f)) + g_err)
    r = B.up(B.up(B.up(la * f.r) + rnd) + _TINY)
    out = extend(Form(gc, g, e, r), nonlin)
    B.finite(out.r, out.E)
    return out


# ----------------------------------------------------------------------------- version 3


def columns(f: Form, cols: slice) -> Form:
    """The entries ``cols`` of every row (the rows' private symbols unchanged)."""
    return Form(f.c[:, cols], f.G[:, cols], f.E[:, cols], f.r[:, cols])


def concat(parts: list[Form]) -> Form:
    """Entries side by side (the parts share their rows' private-symbol layout)."""
    return Form(
        np.concatenate([p.c for p in parts], axis=1),
        np.concatenate([p.G for p in parts], axis=1),
        np.concatenate([p.E for p in parts], axis=1),
        np.concatenate([p.r for p in parts], axis=1),
    )


def scale(f: Form, mid: np.ndarray, rad: np.ndarray) -> Form:
    """Forms of value ⊙ s for factors s ∈ mid ± rad (R, k) per row and entry: the centre
    and coefficients times ``mid``, and the remainder |mid|·r + rad·|value| with
    |value| ≤ |c| + dev, plus the products' rounding (≤ u per product)."""
    c = f.c * mid
    g = f.G * mid[..., None, None]
    e = f.E * mid[..., None]
    size = B.up(np.abs(f.c) + dev(f))
    r = B.up(B.up(f.r * np.abs(mid)) + B.up(rad * size))
    rnd = B.up(2 * _U * coeff_mass(Form(c, g, e, r)))
    r = B.up(B.up(r + rnd) + _TINY)
    B.finite(r)
    return Form(c, g, e, r)


def rotate(f: Form, rot, positions: np.ndarray) -> Form:
    """RoPE on the rows' queries or keys at their 0-based token ``positions``
    (rotate-half: (x_k, x_{k+h}) ↦ (x_k cos − x_{k+h} sin, x_{k+h} cos + x_k sin), the
    entries past ``dim`` unchanged), with the arb-built cos/sin enclosures of
    :func:`attncert.arith.enclose.rotation_at` as interval factors (:func:`scale`)."""
    cos, sin = enclose.rotation_at(rot, positions)
    h, dim = rot.dim // 2, rot.dim
    x1, x2 = columns(f, slice(0, h)), columns(f, slice(h, dim))
    negated = scale(x2, sin.mid, sin.rad)
    negated = Form(-negated.c, -negated.G, -negated.E, negated.r)
    first = add(scale(x1, cos.mid, cos.rad), negated)
    second = add(scale(x2, cos.mid, cos.rad), scale(x1, sin.mid, sin.rad))
    return concat([first, second, columns(f, slice(dim, None))])


def append_constants(f: Form, mid: np.ndarray, rad: np.ndarray) -> Form:
    """Every row extended by constant entries mid ± rad (R, j): ALiBi's extra query and
    key coordinates (q′ = [q, m, −m·i], k′ = [k, j, 1], so q′·k′ = q·k − m(i − j))."""
    rows, j = mid.shape
    const = Form(
        mid.astype(float),
        np.zeros((rows, j, *f.G.shape[2:])),
        np.zeros((rows, j, f.E.shape[2])),
        rad.astype(float),
    )
    return concat([f, const])


def alibi_columns(f: Form, slope: float, positions: np.ndarray, query: bool) -> Form:
    """Queries gain [m, −m·i] (−m·i rounded once: radius u|m·i|), keys [j, 1] (exact)."""
    t = np.asarray(positions, dtype=np.float64)
    if query:
        mi = -slope * t
        mid = np.column_stack([np.full_like(t, slope), mi])
        rad = np.column_stack([np.zeros_like(t), B.up(_U * np.abs(mi) + _TINY)])
    else:
        mid = np.column_stack([t, np.ones_like(t)])
        rad = np.zeros_like(mid)
    return append_constants(f, mid, rad)


def multiply(f1: Form, f2: Form) -> Form:
    """Forms of the entrywise product of two forms of the same rows (a gated MLP's
    act(gate) ⊙ up; one's private symbols a prefix of the other's): with value_k =
    c_k + L_k + ρ_k (L affine, |ρ_k| ≤ r_k), the product is c₁c₂ + c₁L₂ + c₂L₁ plus
    c₁ρ₂ + c₂ρ₁ + (L₁ + ρ₁)(L₂ + ρ₂), bounded by |c₁|r₂ + |c₂|r₁ + dev₁·dev₂; the
    rounding of the coefficients' products and sums by 4u(|c₁|·mass₂ + |c₂|·mass₁). The
    remainder becomes new private symbols."""
    slots = max(f1.E.shape[-1], f2.E.shape[-1])
    e1, e2 = _pad(f1.E, slots), _pad(f2.E, slots)
    c = f1.c * f2.c
    g = f1.G * f2.c[..., None, None] + f2.G * f1.c[..., None, None]
    e = e1 * f2.c[..., None] + e2 * f1.c[..., None]
    a1, a2 = np.abs(f1.c), np.abs(f2.c)
    r = B.up(B.up(a1 * f2.r) + B.up(a2 * f1.r))
    r = B.up(r + B.up(dev(f1) * dev(f2)))
    rnd = B.up(4 * _U * B.up(B.up(a1 * coeff_mass(f2)) + B.up(a2 * coeff_mass(f1))))
    out = extend(Form(c, g, e, np.zeros_like(r)), B.up(B.up(r + rnd) + _TINY))
    B.finite(out.E)
    return out
