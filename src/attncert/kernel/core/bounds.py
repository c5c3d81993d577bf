"""Outward-rounded interval bounds for the soft-certificate checker (trusted).

Arithmetic facts used (all inputs are float64, i.e. exact dyadic rationals):

1. IEEE ``+ − × ÷ sqrt`` round to nearest, so the exact result is within half an ulp of
   the float: one ``nextafter`` step outward (:func:`dn`, :func:`up`) encloses it.
2. A length-k dot product in any order errs by ≤ γ_k·|a|·|b|, γ_k = ku/(1 − ku),
   u = 2⁻⁵³ (Higham §3.1); a float sum of k non-negative floats is within a factor
   (1 ± γ_k) of the exact one. :func:`g2` = 2γ_{k+4} covers both and the rounding of the
   bound itself; 2⁻¹⁰⁰⁰ covers underflow.
3. exp, erf, tanh are monotone: they are enclosed through grids of arb values
   (e^{−j·2⁻¹⁶} as e^{−a·2⁻⁶}·e^{−b·2⁻¹⁶}; erf(j·2⁻¹²)).

Everything else is these facts applied step by step; see :mod:`attncert.kernel.soft.checker`
for the bounds they build (LayerNorm, activations, one key's weight, the weight-box
LP, the first-layer fractional program, the readout back-substitution).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from flint import arb, ctx

_U = 2.0**-53
_TINY = 2.0**-1000


class Undecided(ArithmeticError):
    """A bound overflowed float64."""


def dn(x):
    return np.nextafter(x, -np.inf)


def up(x):
    return np.nextafter(x, np.inf)


def g2(k: int) -> float:
    k += 4
    return float(up(2.0 * k * _U / (1.0 - k * _U)))


def finite(*xs) -> None:
    for x in xs:
        if not np.all(np.isfinite(x)):
            raise Undecided("a bound overflowed float64")


def psum_up(x, axis=-1):  # Σ of non-negative floats, upper
    return up(np.sum(x, axis=axis) * (1.0 + g2(x.shape[axis])) + _TINY)


def psum_dn(x, axis=-1):  # Σ of non-negative floats, lower
    return np.maximum(dn(np.sum(x, axis=axis) * (1.0 - g2(x.shape[axis]))), 0.0)


def sum_up(x, axis=-1):
    return up(psum_up(np.maximum(x, 0.0), axis) - psum_dn(np.maximum(-x, 0.0), axis))


def sum_dn(x, axis=-1):
    return dn(psum_dn(np.maximum(x, 0.0), axis) - psum_up(np.maximum(-x, 0.0), axis))


def pmat_up(a, b):  # a @ b for non-negative arrays, upper
    return up((a @ b) * (1.0 + g2(a.shape[-1])) + _TINY)


def centre(lo, hi):
    c = 0.5 * lo + 0.5 * hi
    return c, np.maximum(np.maximum(up(hi - c), up(c - lo)), 0.0)


def lin(lo, hi, w, b=None, w_rad=None):
    """{W x + b : x ∈ [lo, hi]} (rows are boxes), W possibly ± w_rad."""
    c, r = centre(lo, hi)
    g = g2(w.shape[1])
    wa = np.abs(w)
    y = c @ w.T
    rad = (np.abs(c) @ wa.T) * g + (r @ wa.T) * (1.0 + g)
    if w_rad is not None:
        rad = rad + ((np.abs(c) + r) @ w_rad.T) * (1.0 + g)
    rad = up(rad * (1.0 + 4 * _U) + _TINY)
    ylo, yhi = (dn(y + b), up(y + b)) if b is not None else (y, y)
    out = dn(ylo - rad), up(yhi + rad)
    finite(*out)
    return out


def matprod(a, b):
    """Centre and radius of the exact product a @ b."""
    return a @ b, up((np.abs(a) @ np.abs(b)) * g2(a.shape[1]) + _TINY)


def matprod_r(c, r, w):
    """Centre and radius of [c ± r] @ w."""
    wa = np.abs(w)
    g = g2(w.shape[0])
    return c @ w, up(((np.abs(c) @ wa) * g + (r @ wa) * (1.0 + g)) * (1.0 + 4 * _U) + _TINY)


def iadd(alo, ahi, blo, bhi):
    return dn(alo + blo), up(ahi + bhi)


def imul(alo, ahi, blo, bhi):
    ps = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
    return np.minimum.reduce([dn(p) for p in ps]), np.maximum.reduce([up(p) for p in ps])


def dots(qlo, qhi, klo, khi):
    """Every q_j·k_w (rows boxes) as an (Nq, Nk) enclosure."""
    qc, qr = centre(qlo, qhi)
    kc, kr = centre(klo, khi)
    g = g2(qc.shape[-1])
    aq, ak = np.abs(qc), np.abs(kc)
    rad = (aq @ ak.T) * g + (aq @ kr.T + qr @ ak.T + qr @ kr.T) * (1.0 + g)
    rad = up(rad * (1.0 + 4 * _U) + _TINY)
    y = qc @ kc.T
    out = dn(y - rad), up(y + rad)
    finite(*out)
    return out


def absmax(lo, hi):
    return np.maximum(np.abs(lo), np.abs(hi))


def ball(x: arb) -> tuple[float, float]:
    return float(dn(float(x.lower()))), float(up(float(x.upper())))


# ----------------------------------------------------------------------------- tables


@cache
def _tables():
    old = ctx.prec
    ctx.prec = 80
    try:
        coarse = [(arb(-a) / 64).exp() for a in range(64 * 64 + 2)]
        fine = [(arb(-b) / 65536).exp() for b in range(1024)]
        erf = [(arb(j) / 4096).erf() for j in range(6 * 4096 + 2)]
    finally:
        ctx.prec = old
    return (
        np.array([ball(x)[0] for x in coarse]),
        np.array([ball(x)[1] for x in coarse]),
        np.array([ball(x)[0] for x in fine]),
        np.array([ball(x)[1] for x in fine]),
        np.array([ball(x)[0] for x in erf]),
        np.array([ball(x)[1] for x in erf]),
    )


def _nonpositive(*xs) -> None:
    """The tables hold e^x for x ≤ 0 only: a positive argument is a caller's error (a
    negative table index would wrap around silently), never an answer."""
    for x in xs:
        if np.any(np.asarray(x) > 0):
            raise ValueError("exp_le0: an argument is positive; the tables cover x ≤ 0 only")


def exp_le0(xlo, xhi):
    """[e^xlo, e^xhi] for x ≤ 0: x ∈ [−(k+1)/2¹⁶, −k/2¹⁶] with k = ⌊−x·2¹⁶⌋; ≤ −64 → [0, e⁻⁶⁴]."""
    _nonpositive(xlo, xhi)
    clo, chi, flo, fhi, _, _ = _tables()
    top = 64.0 * 65536
    with np.errstate(over="ignore"):  # huge arguments: inf, then the table's end
        k_up = np.minimum(np.floor(-xhi * 65536.0), top).astype(np.int64)
        k_dn = np.floor(-xlo * 65536.0) + 1.0
    far = k_dn > top
    kd = np.minimum(k_dn, top).astype(np.int64)
    e_hi = np.minimum(up(chi[k_up >> 10] * fhi[k_up & 1023]), 1.0)
    e_lo = np.where(far, 0.0, np.maximum(dn(clo[kd >> 10] * flo[kd & 1023]), 0.0))
    return e_lo, e_hi


def exp_le0_fine(xlo, xhi):
    """[e^xlo, e^xhi] for x ≤ 0 to about 2⁻⁴⁸ relative: with k = ⌊−x·2¹⁶⌋ and
    δ = x + k·2⁻¹⁶ ∈ (−2⁻¹⁶, 0] — exact by Sterbenz's lemma, since −x and k·2⁻¹⁶ are within
    a factor 2 — e^x = e^{−k·2⁻¹⁶}·e^δ with 1 + δ ≤ e^δ ≤ 1 + δ + δ²/2 (Taylor, δ ≤ 0);
    beyond −64, [0, e⁻⁶⁴] as :func:`exp_le0`."""
    _nonpositive(xlo, xhi)
    clo, chi, flo, fhi, _, _ = _tables()
    top = 64.0 * 65536

    def bound(x, upper: bool):
        with np.errstate(over="ignore", invalid="ignore"):
            kf = np.floor(-x * 65536.0)
            delta_ok = kf < top
        far = ~delta_ok
        k = np.where(far, 0.0, kf).astype(np.int64)
        delta = np.where(far, 0.0, x + k / 65536.0)  # exact
        if upper:
            base = up(chi[k >> 10] * fhi[k & 1023])
            val = up(base * up(1.0 + up(delta + up(0.5 * up(delta * delta)))))
            return np.where(far, float(chi[4096]), np.minimum(val, 1.0))  # e^x ≤ e^{−64}
        base = dn(clo[k >> 10] * flo[k & 1023])
        val = dn(base * dn(1.0 + delta))
        return np.where(far, 0.0, np.maximum(val, 0.0))

    return bound(np.asarray(xlo, dtype=float), False), bound(np.asarray(xhi, dtype=float), True)


def erf_lower(x):
    """A lower bound of erf(x) (increasing, odd; 1 − erf(6) < 2.2·10⁻¹⁷)."""
    _, _, _, _, elo, ehi = _tables()
    s = x * 4096.0
    top = 6.0 * 4096
    kp = np.clip(np.floor(s), 0, top).astype(np.int64)
    kn = np.clip(np.ceil(-s), 0, top + 1).astype(np.int64)
    pos = np.where(s >= top, float(dn(1.0 - 2.0**-52)), elo[kp])
    neg = np.where(-s > top, -1.0, -ehi[kn])
    return np.clip(np.where(x >= 0, pos, neg), -1.0, 1.0)  # |erf| ≤ 1


def erf_upper(x):
    return -erf_lower(-x)


# ----------------------------------------------------------------------------- activations

_R2 = ball(1 / arb(2).sqrt())  # 1/√2
_R2PI = ball(1 / (2 * arb.pi()).sqrt())  # 1/√(2π)
_K = ball((2 / arb.pi()).sqrt())  # √(2/π)
_C = ball(arb(44715) / 1000000)  # 0.044715
_C3 = ball(3 * arb(44715) / 1000000)
ACT_MIN, X_LO, X_HI = -0.171, -0.76, -0.74  # min of GELU/tanh-GELU, bracket of its argmin
SLOPE = (-0.13, 1.13)  # enclosure of GELU′ and tanh-GELU′ on ℝ
# SiLU = x·σ(x): SiLU′ = σ·(1 + x(1 − σ)); the bracket is 1 + x(1 − σ(x)) (increasing for
# x < 0, ≥ 1 for x ≥ 0) changing sign once in (−1.28, −1.27), so SiLU is unimodal with
# min −0.27846… ≥ −0.2785; SiLU′ ∈ [−0.09984…, 1.09984…] ⊂ [−0.1, 1.1]
SILU_MIN, SILU_X_LO, SILU_X_HI = -0.2785, -1.28, -1.27
SILU_SLOPE = (-0.1, 1.1)


def sigmoid(x):
    """σ at points x, enclosed: 1/(1 + e^{−x}) for x ≥ 0, e^x/(1 + e^x) below (monotone in
    the exponential, e^{−|x|} from the arb table)."""
    x = np.asarray(x, dtype=float)
    e_lo, e_hi = exp_le0(-np.abs(x), -np.abs(x))
    lo = np.where(x >= 0, dn(1.0 / up(1.0 + e_hi)), dn(e_lo / up(1.0 + e_lo)))
    hi = np.where(x >= 0, up(1.0 / dn(1.0 + e_lo)), up(e_hi / dn(1.0 + e_hi)))
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _c(v, shape):
    return np.full(shape, v[0]), np.full(shape, v[1])


def _sq(lo, hi):
    a, b = np.abs(lo), np.abs(hi)
    low = np.where((lo <= 0) & (hi >= 0), 0.0, dn(np.minimum(a, b) ** 2))
    return np.maximum(low, 0.0), up(np.maximum(a, b) ** 2)


def _cdf(lo, hi):  # Φ over [lo, hi]
    t_lo = imul(lo, lo, *_c(_R2, lo.shape))[0]
    t_hi = imul(hi, hi, *_c(_R2, hi.shape))[1]
    return dn(0.5 * dn(1.0 + erf_lower(t_lo))), up(0.5 * up(1.0 + erf_upper(t_hi)))


def _tanh_lo(u):  # lower bound of tanh at points u
    a = np.abs(u)
    e_lo, e_hi = exp_le0(-2.0 * a, -2.0 * a)
    pos = np.maximum(dn(dn(1.0 - e_hi) / up(1.0 + e_hi)), 0.0)
    neg = np.maximum(-up(up(1.0 - e_lo) / dn(1.0 + e_lo)), -1.0)
    return np.where(u >= 0, pos, neg)


def _tanh_of(lo, hi):  # tanh(√(2/π)(x + c x³)) over [lo, hi] (increasing in x)
    def u(x):
        cube = imul(*_sq(x, x), x, x)
        inner = iadd(x, x, *imul(*cube, *_c(_C, x.shape)))
        return imul(*inner, *_c(_K, x.shape))

    return _tanh_lo(u(lo)[0]), -_tanh_lo(-u(hi)[1])


def act_point(kind: str, x):
    """act(x) at points x, enclosed."""
    if kind == "relu":
        return np.maximum(x, 0.0), np.maximum(x, 0.0)
    if kind == "gelu":
        return imul(x, x, *_cdf(x, x))
    if kind == "silu":
        return imul(x, x, *sigmoid(x))
    t_lo, t_hi = _tanh_of(x, x)
    return imul(x, x, dn(0.5 * dn(1.0 + t_lo)), up(0.5 * up(1.0 + t_hi)))


def act_box(kind: str, lo, hi):
    """act over [lo, hi]: endpoints; GELU-type functions are unimodal with argmin in
    (−0.76, −0.74) and minimum ≥ −0.171."""
    if kind == "relu":
        return np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    a, b = act_point(kind, lo), act_point(kind, hi)
    top = np.maximum(a[1], b[1])
    x_lo, x_hi, least = (
        (SILU_X_LO, SILU_X_HI, SILU_MIN) if kind == "silu" else (X_LO, X_HI, ACT_MIN)
    )
    bot = np.where(hi <= x_lo, b[0], np.where(lo >= x_hi, a[0], least))
    return np.minimum(bot, top), top


def act_slopes(kind: str, lo, hi):
    """Enclosure of act′ over [lo, hi] (ReLU: Clarke derivative)."""
    if kind == "relu":
        return np.where(lo >= 0, 1.0, 0.0), np.where(hi <= 0, 0.0, 1.0)
    if kind == "silu":  # σ(x)(1 + x(1 − σ(x))), σ increasing
        g = sigmoid(lo)[0], sigmoid(hi)[1]
        brk = iadd(1.0, 1.0, *imul(lo, hi, dn(1.0 - g[1]), up(1.0 - g[0])))
        s = imul(*g, *brk)
        return np.maximum(s[0], SILU_SLOPE[0]), np.minimum(s[1], SILU_SLOPE[1])
    if kind == "gelu":  # Φ(x) + x φ(x)
        s2 = _sq(lo, hi)
        e = exp_le0(-0.5 * s2[1], -0.5 * s2[0])
        phi = imul(*e, *_c(_R2PI, lo.shape))
        s = iadd(*_cdf(lo, hi), *imul(lo, hi, *phi))
    else:  # ½(1 + t) + ½ x (1 − t²) √(2/π)(1 + 3c x²)
        t = _tanh_of(lo, hi)
        half = dn(0.5 * dn(1.0 + t[0])), up(0.5 * up(1.0 + t[1]))
        t2 = _sq(*t)
        sech = np.maximum(dn(1.0 - t2[1]), 0.0), up(1.0 - t2[0])
        du = imul(*iadd(1.0, 1.0, *imul(*_sq(lo, hi), *_c(_C3, lo.shape))), *_c(_K, lo.shape))
        sec = imul(*imul(lo, hi, *sech), *du)
        s = iadd(*half, dn(0.5 * sec[0]), up(0.5 * sec[1]))
    return np.maximum(s[0], SLOPE[0]), np.minimum(s[1], SLOPE[1])


# ----------------------------------------------------------------------------- LayerNorm


def layernorm(norm, lo, hi):
    """(out_lo, out_hi, s_max, |n| bound, var_lo) of LN over row boxes: centred coordinate
    ranges are exact (linear), var ≥ mean of dist(0, C_k)², |n_k| ≤ √(d−1)."""
    d = lo.shape[-1]
    if norm.rms:  # RMSNorm: no centring, m = mean(y²) ≥ mean of dist(0, [lo, hi])²
        c_lo, c_hi = lo, hi
    else:
        s_hi, s_lo = sum_up(hi), sum_dn(lo)
        c_lo = dn(lo - up(up(up(s_hi[..., None] - hi) + lo) / d))
        c_hi = up(hi - dn(dn(dn(s_lo[..., None] - lo) + hi) / d))
    dist = np.maximum(np.maximum(c_lo, -c_hi), 0.0)
    var_lo = np.maximum(dn(psum_dn(dn(dist * dist)) / d), 0.0)
    big = absmax(c_lo, c_hi)
    var_hi = up(psum_up(up(big * big)) / d)
    s_max = up(1.0 / dn(np.sqrt(dn(var_lo + norm.eps))))
    s_min = dn(1.0 / up(np.sqrt(up(var_hi + norm.eps))))
    n_lo, n_hi = imul(c_lo, c_hi, s_min[..., None], s_max[..., None])
    cap = float(up(np.sqrt(float(d if norm.rms else max(d - 1, 0)))))  # ‖n‖² < d (Σn = 0)
    n_lo, n_hi = np.maximum(n_lo, -cap), np.minimum(n_hi, cap)
    o = iadd(*imul(n_lo, n_hi, norm.weight, norm.weight), norm.bias, norm.bias)
    finite(*o, s_max)
    return o[0], o[1], s_max, absmax(n_lo, n_hi), var_lo


def layernorm_change(norm, delta, s_max, n_abs):
    """|ΔLN| from |Δy| ≤ delta: ‖J‖₂ ≤ s_max and |J_kl| ≤ s_max(δ_kl + 1/d + |n_k||n_l|/d);
    RMSNorm: J = s(I − nnᵀ/d), no 1/d term."""
    d = delta.shape[-1]
    l2 = up(np.sqrt(psum_up(up(delta * delta))))
    coord = delta if norm.rms else up(delta + up(psum_up(delta) / d)[..., None])
    coord = up(coord + up(n_abs * up(psum_up(up(n_abs * delta)) / d)[..., None]))
    out = up(up(np.minimum(coord, l2[..., None]) * s_max[..., None]) * np.abs(norm.weight))
    finite(out)
    return out


def sphere(norm, w, b):
    """[lo, hi] ∋ w·LN(y) + b for every y: with n = (y − μ)/√(σ² + ε), Σ n = 0 and
    ‖n‖² < d, so (w ⊙ γ)·n = (a − ā1)·n ≤ ‖a − ā1‖₂·√d."""
    d = len(w)
    a_lo, a_hi = imul(w, w, norm.weight, norm.weight)
    if norm.rms:  # RMSNorm: ‖n‖² < d but Σn ≠ 0: |a·n| ≤ ‖a‖₂√d
        dev = absmax(a_lo, a_hi)
    else:
        m_lo, m_hi = dn(sum_dn(a_lo) / d), up(sum_up(a_hi) / d)
        dev = np.maximum(up(a_hi - m_lo), up(m_hi - a_lo))
    rad = up(up(np.sqrt(psum_up(up(dev * dev)))) * up(np.sqrt(float(d))))
    c = lin(norm.bias[None], norm.bias[None], w[None], np.array([b]))
    return float(dn(c[0][0, 0] - rad)), float(up(c[1][0, 0] + rad))


# ----------------------------------------------------------------------------- RoPE


@cache
def _rot(base: float, dim: int, scale: float, n_tok: int):
    out = np.empty((4, n_tok, dim // 2))
    old = ctx.prec
    ctx.prec = 128
    try:
        for k in range(dim // 2):
            w = arb(base) ** (arb(-2 * k) / arb(dim)) / arb(scale)
            for t in range(n_tok):
                a = w * arb(t)
                out[0, t, k], out[1, t, k] = ball(a.cos())
                out[2, t, k], out[3, t, k] = ball(a.sin())
    finally:
        ctx.prec = old
    out[0], out[2] = np.maximum(out[0], -1.0), np.maximum(out[2], -1.0)
    out[1], out[3] = np.minimum(out[1], 1.0), np.minimum(out[3], 1.0)
    out.setflags(write=False)
    return out


def rotation(rot, n_tok: int):
    """(cos_lo, cos_hi, sin_lo, sin_hi) (n_tok, dim/2) of RoPE's angles (t/scale)·base^(−2k/dim)
    for token indices t < n_tok, from arb at 128 bits."""
    return tuple(_rot(float(rot.base), int(rot.dim), float(rot.scale), int(n_tok)))


def rotate(rot, lo, hi, pos):
    """Rows [lo, hi] rotated pairwise (k, k + dim/2) at their positions: each output is
    linear in the pair, so interval products with cos/sin enclosures are outward."""
    c_lo, c_hi, s_lo, s_hi = rotation(rot, int(np.max(pos)) + 1)
    c, s = (c_lo[pos], c_hi[pos]), (s_lo[pos], s_hi[pos])
    h, e = rot.dim // 2, rot.dim
    a, b = (lo[:, :h], hi[:, :h]), (lo[:, h:e], hi[:, h:e])
    bs = imul(*b, *s)
    one = iadd(*imul(*a, *c), -bs[1], -bs[0])
    two = iadd(*imul(*b, *c), *imul(*a, *s))
    return (
        np.concatenate([one[0], two[0], lo[:, e:]], axis=1),
        np.concatenate([one[1], two[1], hi[:, e:]], axis=1),
    )


def rotate_change(rot, delta, pos):
    """|Δ(R x)| from |Δx| ≤ delta: per pair |c|δ₁ + |s|δ₂, and ≤ √(δ₁² + δ₂²) (R is a
    rotation of the pair)."""
    if rot is None:
        return delta
    c_lo, c_hi, s_lo, s_hi = rotation(rot, int(np.max(pos)) + 1)
    c, s = absmax(c_lo, c_hi)[pos], absmax(s_lo, s_hi)[pos]
    h, e = rot.dim // 2, rot.dim
    a, b = delta[:, :h], delta[:, h:e]
    r = up(np.sqrt(up(up(a * a) + up(b * b))))
    one = np.minimum(up(up(c * a) + up(s * b)), r)
    two = np.minimum(up(up(c * b) + up(s * a)), r)
    return np.concatenate([one, two, delta[:, e:]], axis=1)
