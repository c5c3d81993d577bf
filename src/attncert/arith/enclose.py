"""Rigorous float64 enclosures of a model's position-wise maps, vectorized over rows.

A block of activation vectors is held as an :class:`~attncert.arith.filter.Enclosed`
pair (mid, rad) of float64 arrays with |exact − mid| ≤ rad entrywise. Every map of
:mod:`attncert.arith.positionwise` has a counterpart here that takes enclosures to
enclosures, so a whole layer of n rows costs a few numpy passes instead of n·d
Python-level field operations; the field (exact or arb) is used afterwards only for
the few comparisons the enclosures leave open (:mod:`attncert.arith.rows`).

Error bounds (u = 2⁻⁵³, round to nearest; numpy's +, −, ×, ÷ and √ are IEEE-754
correctly rounded):

* affine y = x Wᵀ + b with exact float64 W, b and x ∈ m ± r:
  |ỹ − y| ≤ r|W|ᵀ + γ_k|m||W|ᵀ + 2u|ỹ| (γ_k = 1.01ku bounds a length-k dot product
  in any order, with or without FMA — Higham §3.1; the last term the bias addition);
* sums, products and scalings: first-order propagation of the radii plus 2u|result|;
* LayerNorm: μ, c = x − μ and σ² enclosed separately (correlations are dropped,
  which only widens), 1/√(σ² + ε) bracketed by correctly rounded √ and ÷ at the
  ends of the variance interval;
* ReLU exactly on the interval ends; GELU, tanh-GELU and SiLU by a piecewise Taylor
  table whose coefficients and remainders are computed once in arb (:class:`_Taylor`),
  and a rigorous Lipschitz bound for the input radius;
* RMSNorm as LayerNorm without the mean; a gated MLP as the product of two enclosures;
* rotary queries and keys (:func:`projections_at`): cos and sin of every angle
  t·base^(−2k/dim) computed in arb and held as float64 midpoints with radii that cover
  the arb ball, then products and sums as above; ALiBi's −m·(i − j) (:func:`alibi`)
  with the rounding of its one product.

Every radius is itself computed in float64 from non-negative terms and inflated by
(1 + 2(k + 4)u) plus an absolute 2⁻¹⁰⁰⁰·k, which dominates its own rounding and any
underflow. A non-finite enclosure (overflow) raises :class:`Undecided`.

Part of the trusted base (imports no solver, no search code).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from flint import arb, arb_series, ctx

from attncert.arith.field import Undecided
from attncert.arith.filter import Enclosed
from attncert.errors import UnsupportedError
from attncert.model.positional import feature_matrix
from attncert.model.spec import Activation, FeedForward, LayerNorm, Model, Rotary

U = 2.0**-53
TINY = 2.0**-1000


def _gamma(k: int) -> float:
    return 1.01 * k * U


def _up(e: np.ndarray, k: int = 1) -> np.ndarray:
    """A non-negative bound computed with ≤ k + 4 roundings, made an upper bound."""
    return e * (1 + 2 * (k + 4) * U) + TINY * max(k, 1)


def _checked(mid: np.ndarray, rad: np.ndarray) -> Enclosed:
    if not (np.isfinite(mid).all() and np.isfinite(rad).all()):
        raise Undecided(
            "a float64 enclosure overflowed (an activation beyond 1e308)",
            expected="a model whose activations stay within float64 range",
        )
    return Enclosed(mid, rad)


def point(mid: np.ndarray) -> Enclosed:
    """Exact float64 values (radius 0)."""
    mid = np.asarray(mid, dtype=np.float64)
    return Enclosed(mid, np.zeros_like(mid))


def affine(x: Enclosed, w: np.ndarray, b: np.ndarray | None = None) -> Enclosed:
    """x Wᵀ + b for exact float64 W (out × in) and b (module docstring)."""
    k = w.shape[1]
    aw = np.abs(w).T
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        m = x.mid @ w.T
        if b is not None:
            m = m + b
        rad = x.rad @ aw + _gamma(k) * (np.abs(x.mid) @ aw) + 2 * U * np.abs(m)
        rad = _up(rad, k)
    return _checked(m, rad)


def add(a: Enclosed, b: Enclosed) -> Enclosed:
    m = a.mid + b.mid
    return _checked(m, _up(a.rad + b.rad + 2 * U * np.abs(m), 2))


def scale(x: Enclosed, g: np.ndarray) -> Enclosed:
    """x ⊙ g for an exact float64 g (broadcast)."""
    m = x.mid * g
    return _checked(m, _up(x.rad * np.abs(g) + 2 * U * np.abs(m), 2))


def mul(a: Enclosed, b: Enclosed) -> Enclosed:
    """Entrywise product of two enclosures (broadcast)."""
    m = a.mid * b.mid
    rad = np.abs(a.mid) * b.rad + a.rad * (np.abs(b.mid) + b.rad) + 2 * U * np.abs(m)
    return _checked(m, _up(rad, 4))


def mean_rows(x: Enclosed, groups: list[np.ndarray]) -> Enclosed:
    """Row g of the result: the mean of the rows ``groups[g]`` of x."""
    d = x.mid.shape[1]
    mid = np.empty((len(groups), d))
    rad = np.empty((len(groups), d))
    for g, idx in enumerate(groups):
        k = len(idx)
        s = x.mid[idx].sum(axis=0)
        e = x.rad[idx].sum(axis=0) + _gamma(k) * np.abs(x.mid[idx]).sum(axis=0)
        mid[g] = s / k
        rad[g] = _up(e / k + 2 * U * np.abs(mid[g]), k + 2)
    return _checked(mid, rad)


def neg(x: Enclosed) -> Enclosed:
    return Enclosed(-x.mid, x.rad)


def relu(x: Enclosed) -> Enclosed:
    m, r = x.mid, x.rad
    pos = m >= r  # m − r ≥ 0 exactly: the identity on the whole interval
    neg = m <= -r  # m + r ≤ 0: zero on the whole interval
    hi = (m + r) * (1 + 4 * U)  # ≥ m + r: the straddling interval is [0, hi]
    mid = np.where(pos, m, np.where(neg, 0.0, hi / 2))
    rad = np.where(pos, r, np.where(neg, 0.0, hi / 2))
    return _checked(mid, rad)


def layer_norm(norm: LayerNorm, x: Enclosed) -> Enclosed:
    """γ ⊙ (x − μ)/√(σ² + ε) + β per row (biased variance), enclosed; RMSNorm
    (``norm.rms``): the same with μ = 0, so σ² is the mean of the squares."""
    d = x.mid.shape[1]
    m, r = x.mid, x.rad
    if norm.rms:
        c, c_r = m, r
    else:
        mu = m.sum(axis=1, keepdims=True) / d
        mu_r = _up(
            (r.sum(axis=1, keepdims=True) + _gamma(d) * np.abs(m).sum(axis=1, keepdims=True)) / d
            + 2 * U * np.abs(mu),
            d + 2,
        )
        c = m - mu
        c_r = _up(r + mu_r + 2 * U * np.abs(c), 2)
    ac = np.abs(c)
    lo = np.maximum(ac - c_r, 0.0) * (1 - 4 * U)  # ≤ min |c| over the interval
    hi = (ac + c_r) * (1 + 4 * U)  # ≥ max |c|
    var_lo = (lo * lo).sum(axis=1, keepdims=True) / d * (1 - 2 * (d + 4) * U)
    var_hi = _up((hi * hi).sum(axis=1, keepdims=True) / d, d + 2)
    eps = norm.eps
    s_lo = (var_lo + eps) * (1 - 4 * U)
    s_hi = (var_hi + eps) * (1 + 4 * U)
    if not (s_lo > 0).all():
        raise Undecided(
            "a LayerNorm/RMSNorm variance + ε is not separated from 0 in float64",
            expected="a LayerNorm whose ε is a positive normal float",
        )
    inv_hi = (1.0 / np.sqrt(s_lo)) * (1 + 6 * U)  # ≥ 1/√(σ² + ε)
    inv_lo = (1.0 / np.sqrt(s_hi)) * (1 - 6 * U)  # ≤ 1/√(σ² + ε)
    inv = Enclosed((inv_lo + inv_hi) / 2, _up((inv_hi - inv_lo) / 2 + 2 * U * inv_hi, 3))
    y = mul(Enclosed(c, c_r), inv)
    y = scale(y, norm.weight)
    return add(y, point(np.broadcast_to(norm.bias, y.mid.shape)))


# --------------------------------------------------------------------------- GELU
GELU_TANH_CUBIC = 0.044715
# tables cover [−R, R]; outside, |f(x) − max(x, 0)| < the bound: GELU and tanh-GELU
# decay like e^(−x²/2) (R = 10: < 1e-20), SiLU only like |x|e^(−|x|) (R = 48:
# 48·e^(−48) < 6.9e-20 < 1e-19, and |x|e^(−|x|) decreases beyond 1)
_RANGES = {Activation.GELU: 10.0, Activation.GELU_TANH: 10.0, Activation.SILU: 48.0}
_OUTSIDES = {Activation.GELU: 1e-20, Activation.GELU_TANH: 1e-20, Activation.SILU: 1e-19}
# (cell half-width H, Taylor degree K): tanh-GELU's complex singularities come within
# ~0.14 of the real axis near |x| = 10, so it needs smaller cells; SiLU's poles are at
# ±iπ(2k + 1), far from the real axis
_CELLS = {
    Activation.GELU: (1.0 / 32, 14),
    Activation.GELU_TANH: (1.0 / 128, 16),
    Activation.SILU: (1.0 / 8, 14),
}


def _series(kind: Activation, x: arb_series) -> arb_series:
    if kind is Activation.GELU:
        return x * (1 + (x * arb(2).rsqrt()).erf()) / 2
    if kind is Activation.SILU:
        return x * (1 + (-x).exp()).inv()
    k = (arb(2) / arb.pi()).sqrt()
    z = k * (x + arb(GELU_TANH_CUBIC) * x * x * x)
    e = (2 * z).exp()
    return x * (1 + (e - 1) * (e + 1).inv()) / 2


def _coeffs(s: arb_series, n: int) -> list[arb]:
    c = list(s.coeffs())
    return c + [arb(0)] * (n - len(c))


class _Taylor:
    """f(c + t) = Σ_{k ≤ K} a_k t^k + err for |t| ≤ H on cells centred at c = 2Hj,
    with float64 coefficients a_k and a rigorous per-cell err (coefficient rounding
    plus the Lagrange remainder, from arb Taylor series over the whole cell), and a
    rigorous Lipschitz constant of f on the real line."""

    def __init__(self, kind: Activation):
        _H, _K = self.h, self.k = _CELLS[kind]
        self.range, self.outside = _RANGES[kind], _OUTSIDES[kind]
        n_cells = round(self.range / (2 * _H))
        centres = np.arange(-n_cells, n_cells + 1) * (2 * _H)
        coef = np.empty((len(centres), _K + 1))
        err = np.empty(len(centres))
        lip = np.empty(len(centres))
        cap = ctx.cap
        ctx.cap = _K + 4  # series length (python-flint truncates at ctx.cap)
        try:
            self._fill(kind, centres, coef, err, lip)
        finally:
            ctx.cap = cap
        self.coef, self.err = coef, err
        self.coef_t = np.ascontiguousarray(coef.T)
        self.abs_sum = (np.abs(coef) * _H ** np.arange(_K + 1)).sum(axis=1) * (1 + 2 * (_K + 4) * U)
        # Lipschitz constants: per cell (with its neighbours, for radii ≤ H) and global
        # (outside the table |f'| < 1 + 1e-15)
        pad = np.concatenate([[lip[0]], lip, [lip[-1]]])
        self.lip_near = np.maximum(np.maximum(pad[:-2], pad[1:-1]), pad[2:])
        self.lip_near[[0, -1]] = np.maximum(self.lip_near[[0, -1]], 1.01)
        self.lip = max(float(lip.max()), 1.01)
        self.n_cells = n_cells

    def _fill(self, kind, centres, coef, err, lip) -> None:
        _H, _K = self.h, self.k
        with ctx.workprec(128):
            for j, c in enumerate(centres.tolist()):
                at_c = _coeffs(_series(kind, arb_series([arb(c), 1], prec=_K + 1)), _K + 1)
                # the remainder's coefficient and f' over the cell, as the largest over
                # four sub-balls (smaller balls overestimate less)
                rem, der = arb(0), arb(0)
                for s in range(4):
                    sub = arb(c - _H + (2 * s + 1) * _H / 4, _H / 4)
                    cell = _coeffs(_series(kind, arb_series([sub, 1], prec=_K + 2)), _K + 2)
                    rem = rem.max(abs(cell[_K + 1]).upper())
                    der = der.max(abs(cell[1]).upper())
                e = arb(0)
                for k in range(_K + 1):
                    a = at_c[k]
                    coef[j, k] = float(a.mid())
                    e += (abs(a - arb(coef[j, k]))).upper() * arb(_H) ** k
                e += rem * arb(_H) ** (_K + 1)
                err[j] = float(e.upper()) * (1 + 2**-40)
                lip[j] = float(der.upper()) * (1 + 2**-40)

    def __call__(self, x: Enclosed) -> Enclosed:
        rows = x.mid.shape[0] if x.mid.ndim > 1 else 1
        step = max(1, (1 << 20) // max(1, x.mid.size // max(rows, 1)))
        if x.mid.ndim > 1 and rows > step:  # in row blocks: the temporaries stay small
            parts = [self._eval(x.take(slice(a, a + step))) for a in range(0, rows, step)]
            return Enclosed(
                np.concatenate([p.mid for p in parts]), np.concatenate([p.rad for p in parts])
            )
        return self._eval(x)

    def _eval(self, x: Enclosed) -> Enclosed:
        _H, _K = self.h, self.k
        m, r = x.mid, x.rad
        inside = np.abs(m) <= self.range
        j = np.clip(np.rint(m / (2 * _H)), -self.n_cells, self.n_cells)
        t = np.where(inside, m - j * (2 * _H), 0.0)  # exact (Sterbenz): |t| ≤ H
        idx = (j + self.n_cells).astype(np.int64)
        p = self.coef_t[_K][idx]
        for k in range(_K - 1, -1, -1):  # Horner
            p *= t
            p += self.coef_t[k][idx]
        # Horner's rounding error ≤ γ_2K Σ|a_k||t|^k ≤ γ_2K Σ|a_k|H^k (Higham (5.3))
        pa = self.abs_sum[idx]
        f_err = _gamma(2 * _K + 2) * pa + self.err[idx]
        mid = np.where(inside, p, np.where(m > 0, m, 0.0))
        e = np.where(inside, f_err, self.outside)
        lip = np.where(r <= _H, self.lip_near[idx], self.lip)
        return _checked(mid, _up(e + lip * r + 2 * U * np.abs(mid), 2 * _K + 4))


@cache
def _taylor(kind: Activation) -> _Taylor:
    return _Taylor(kind)


def activation(kind: Activation, x: Enclosed) -> Enclosed:
    """The FFN non-linearity, enclosed."""
    if kind is Activation.RELU:
        return relu(x)
    return _taylor(kind)(x)


# --------------------------------------------------------------------------- the model
def embed(model: Model, tokens: np.ndarray, positions: np.ndarray, n_tok: int) -> Enclosed:
    """Layer-0 rows word[tok] + W_pos φ(t, N) + table[t] for token ids ``tokens`` at
    0-based ``positions`` of a sequence of ``n_tok`` tokens. φ is the float nearest the
    exact feature (:mod:`attncert.model.positional`), so |φ − φ̃| ≤ u|φ̃|."""
    emb = model.embedding
    y = point(emb.word[tokens])
    if emb.features:
        phi = feature_matrix(emb.features, n_tok)[positions]
        phi_box = Enclosed(phi, _up(U * np.abs(phi), 0))
        y = add(y, affine(phi_box, emb.pos_weight))
    if emb.table is not None:
        y = add(y, point(emb.table[positions]))
    return y


def attention_inputs(model: Model, li: int, x: Enclosed) -> Enclosed:
    layer = model.layers[li]
    if layer.pre_norm and layer.norm1 is not None:
        return layer_norm(layer.norm1, x)
    return x


def projections(model: Model, li: int, hi: int, u: Enclosed) -> tuple[Enclosed, Enclosed, Enclosed]:
    """(Q, K, OV) of head ``hi`` of layer ``li``: OV = (u W_Vᵀ + b_V) W_Oᵀ (without b_O).

    For a head whose scores see positions (RoPE, ALiBi) this is refused: a caller that
    knows each row's position uses :func:`projections_at` and adds :func:`alibi`."""
    h = model.layers[li].heads[hi]
    if h.positional:
        raise UnsupportedError(
            f"layers[{li}].heads[{hi}] has "
            + ("rotary positions" if h.rotary is not None else "ALiBi")
            + f" (model {model.name!r}): this analysis scores attention from row values "
            "alone and does not support position-dependent scores",
            expected="a head without rotary positions or ALiBi",
        )
    return _projections(h, u)


def _projections(h, u: Enclosed) -> tuple[Enclosed, Enclosed, Enclosed]:
    q = affine(u, h.w_q, h.b_q)
    k = affine(u, h.w_k, h.b_k)
    ov = affine(affine(u, h.w_v, h.b_v), h.w_o)
    return q, k, ov


def projections_at(
    model: Model, li: int, hi: int, u: Enclosed, positions: np.ndarray
) -> tuple[Enclosed, Enclosed, Enclosed]:
    """(Q, K, OV) of head ``hi`` of layer ``li`` for rows at 0-based token ``positions``,
    such that every score is the dot product of a query row and a key row: Q and K
    rotated by RoPE when the head has it (:func:`rotate`), and for ALiBi two more
    coordinates, q′ = [q, m, −m·i] and k′ = [k, j, 1], so that q′·k′ = q·k − m·(i − j)
    (:func:`alibi_columns`)."""
    h = model.layers[li].heads[hi]
    q, k, ov = _projections(h, u)
    if h.rotary is not None:
        q, k = rotate(h.rotary, q, positions), rotate(h.rotary, k, positions)
    if h.alibi is not None:
        q, k = alibi_columns(h.alibi, q, k, positions)
    return q, k, ov


def alibi_columns(
    slope: float, q: Enclosed, k: Enclosed, positions: np.ndarray
) -> tuple[Enclosed, Enclosed]:
    """q′ = [q, m, −m·i], k′ = [k, j, 1] for rows at positions i (queries) and j (keys):
    q′·k′ = q·k − m·(i − j), ALiBi's score. m, j and 1 are exact; −m·i is rounded once
    (radius u|m·i|)."""
    t = np.asarray(positions, dtype=np.float64)
    m_col = np.full_like(t, slope)
    mi = -slope * t
    q2 = Enclosed(
        np.column_stack([q.mid, m_col, mi]),
        np.column_stack([q.rad, np.zeros_like(t), _up(U * np.abs(mi), 0)]),
    )
    k2 = Enclosed(
        np.column_stack([k.mid, t, np.ones_like(t)]),
        np.column_stack([k.rad, np.zeros_like(t), np.zeros_like(t)]),
    )
    return q2, k2


@cache
def _rotation_table(rot: Rotary, n_tok: int) -> tuple[Enclosed, Enclosed]:
    """(cos, sin) of the angles (t/scale)·base^(−2k/dim) for t < n_tok, k < dim/2, as
    enclosures: each computed in arb at 128 bits, its float64 midpoint and a radius
    covering the ball (the ball's radius plus the midpoint's rounding, doubled)."""
    h = rot.dim // 2
    cos_m, cos_r = np.empty((n_tok, h)), np.empty((n_tok, h))
    sin_m, sin_r = np.empty((n_tok, h)), np.empty((n_tok, h))
    with ctx.workprec(128):
        base, scale = arb(rot.base), arb(rot.scale)
        omega = [base ** (arb(-2 * k) / rot.dim) / scale for k in range(h)]
        for t in range(n_tok):
            for k in range(h):
                theta = omega[k] * t
                for val, mid, rad in ((theta.cos(), cos_m, cos_r), (theta.sin(), sin_m, sin_r)):
                    fm = float(val.mid())
                    mid[t, k] = fm
                    rad[t, k] = 2 * float((abs(val - arb(fm)) + val.rad()).upper()) + TINY
    return Enclosed(cos_m, cos_r), Enclosed(sin_m, sin_r)


def rotation_at(rot: Rotary, positions: np.ndarray) -> tuple[Enclosed, Enclosed]:
    """(cos, sin) enclosures (len(positions), dim/2) of RoPE's angles at 0-based token
    ``positions`` (:func:`_rotation_table`)."""
    positions = np.asarray(positions, dtype=np.int64)
    cos_t, sin_t = _rotation_table(rot, int(positions.max()) + 1)
    return cos_t.take(positions), sin_t.take(positions)


def rotate(rot: Rotary, x: Enclosed, positions: np.ndarray) -> Enclosed:
    """Rows of ``x`` (queries or keys) rotated by RoPE at their 0-based ``positions``
    (rotate-half layout: (x_k, x_{k+h}) ↦ (x_k cos − x_{k+h} sin, x_{k+h} cos + x_k sin),
    h = dim/2; the coordinates past dim unchanged), enclosed."""
    cos, sin = rotation_at(rot, positions)
    h = rot.dim // 2
    x1, x2 = x.take_cols(slice(0, h)), x.take_cols(slice(h, rot.dim))
    first = add(mul(x1, cos), neg(mul(x2, sin)))
    second = add(mul(x2, cos), mul(x1, sin))
    rest = x.take_cols(slice(rot.dim, None))
    return Enclosed(
        np.concatenate([first.mid, second.mid, rest.mid], axis=1),
        np.concatenate([first.rad, second.rad, rest.rad], axis=1),
    )


def finish_layer(model: Model, li: int, x: Enclosed, attention: Enclosed) -> Enclosed:
    """Residual add, norms and FFN after attention (as
    :func:`attncert.arith.positionwise.finish_layer`); ``attention`` already includes
    every head's b_O."""
    layer = model.layers[li]
    pre = layer.pre_norm
    f = layer.ffn
    if layer.parallel:  # GPT-NeoX: x + attn(LN₁(x)) + FFN(LN₂(x))
        out = add(x, attention)
        if f is not None:
            inp = layer_norm(layer.norm2, x) if layer.norm2 is not None else x
            out = add(out, _ffn(f, inp))
        return out
    after = add(x, attention) if layer.residual else attention
    if not pre and layer.norm1 is not None:
        after = layer_norm(layer.norm1, after)
    out = after
    if f is not None:
        inp = layer_norm(layer.norm2, after) if pre and layer.norm2 is not None else after
        ff = _ffn(f, inp)
        out = add(after, ff) if layer.residual else ff
    if not pre and layer.norm2 is not None:
        out = layer_norm(layer.norm2, out)
    return out


def _ffn(f: FeedForward, inp: Enclosed) -> Enclosed:
    """W₂ act(W₁ y + b₁) + b₂, or gated W₂ (act(W_g y + b_g) ⊙ (W₁ y + b₁)) + b₂."""
    up = affine(inp, f.w1, f.b1)
    if f.gated:
        hidden = mul(activation(f.activation, affine(inp, f.w_gate, f.b_gate)), up)
    else:
        hidden = activation(f.activation, up)
    return affine(hidden, f.w2, f.b2)


def readout_terms(model: Model, y: Enclosed) -> Enclosed:
    """w · r per row (r after the final norm), without the bias: an (R, 1) enclosure."""
    if model.final_norm is not None:
        y = layer_norm(model.final_norm, y)
    return affine(y, model.readout.weight.reshape(1, -1))
