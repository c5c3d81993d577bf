"""Feed-forward non-linearities over intervals: ranges and slope bounds (ReLU, GELU, tanh-GELU).

For a box of pre-activations [lo, hi] (one interval per hidden unit and position):

* :func:`act_range` encloses {act(x) : x ∈ [lo, hi]};
* :func:`act_slope` bounds sup |act′| over [lo, hi], so |act(a) − act(b)| ≤ slope·|a − b|
  for a, b in the interval (mean value theorem; for ReLU the Clarke form:
  ReLU(a) − ReLU(b) = s(a − b) with s ∈ [0, 1], s = 0 when both are ≤ 0).

GELU(x) = x·Φ(x) and tanh-GELU(x) = x·σ(2u(x)), u = √(2/π)(x + 0.044715x³), are
*unimodal*: for x < 0 the sign of act′ is that of 1 − |x|·g(x) with g increasing in |x|
(the inverse Mills ratio for GELU; 2u′(x)(1 − σ(2u)) for tanh-GELU), so act′ changes
sign once, at x* ∈ (−0.76, −0.74); the minimum value is ≥ −0.171 and |act′| ≤ 1.13
everywhere, act′ ≥ −0.13 (re-checked with arb in ``tests/test_soft_certified_arith.py``).
So the range is decided by the endpoints and, when the interval straddles the bracket of
x*, the constant −0.171. Slopes come from an interval evaluation of act′ (Φ + xφ,
resp. its tanh form), clipped to 1.13. erf, exp and tanh are enclosed through the arb
tables of :mod:`attncert.soft.certified.rigorous`.

SiLU(x) = x·σ(x), σ(x) = 1/(1 + e^{−x}) (Llama's SwiGLU gate): SiLU′(x) = σ(x)·h(x) with
h(x) = 1 + x(1 − σ(x)); h ≥ 1 for x ≥ 0 and h′ = (1 − σ)(1 − xσ) > 0 for x < 0, so h
has one root x* ∈ (−1.28, −1.27) and SiLU is unimodal (decreasing, then increasing) with
minimum SiLU(x*) = −0.278464… ≥ −0.2785; sup SiLU′ = 1.099839… ≤ 1.1 and
inf SiLU′ = −0.099839… ≥ −0.1 (proved by arb ball evaluation over cells covering
[−10, 10] in ``tests/test_soft_certified_decoders.py``; beyond, SiLU′ ∈ [σ(10), 1 + 10e^{−10}]
for x ≥ 10 since xσ(1 − σ) ≤ xe^{−x}, and |SiLU′| ≤ (1 + |x|)e^{x} < 0.1 for x ≤ −10). σ is increasing and enclosed through the arb
exp table: σ(x) = 1/(1 + e^{−x}) for x ≥ 0 and e^{x}/(1 + e^{x}) for x < 0 (both
monotone in the enclosed exponential). SiLU′ over an interval is the interval
evaluation of σ·h, clipped to [−0.1, 1.1].
"""

from __future__ import annotations

import numpy as np
from flint import arb

from attncert.model.spec import Activation
from attncert.soft.certified import rigorous as R

X_STAR_LO, X_STAR_HI = -0.76, -0.74  # bracket of the minimiser of GELU and tanh-GELU
ACT_MIN = -0.171  # ≤ min GELU (−0.169971…) and ≤ min tanh-GELU (−0.170041…)
SLOPE_MAX = 1.13  # ≥ sup GELU′ (1.128904…) and ≥ sup tanh-GELU′ (1.128993…)
SLOPE_MIN = -0.13  # ≤ inf GELU′ (−0.128904…) and ≤ inf tanh-GELU′ (−0.128993…)

SILU_X_STAR_LO, SILU_X_STAR_HI = -1.28, -1.27  # bracket of SiLU's minimiser
SILU_MIN = -0.2785  # ≤ min SiLU (−0.278464…)
SILU_SLOPE_MAX = 1.1  # ≥ sup SiLU′ (1.099839…)
SILU_SLOPE_MIN = -0.1  # ≤ inf SiLU′ (−0.099839…)

_INV_SQRT2 = R.enclose(1 / arb(2).sqrt())
_INV_SQRT2PI = R.enclose(1 / (2 * arb.pi()).sqrt())
_K = R.enclose((2 / arb.pi()).sqrt())
_C = R.enclose(arb(44715) / 1000000)  # the decimal 0.044715 of the definition
_C3 = R.enclose(3 * arb(44715) / 1000000)


def _const(c: tuple[float, float], shape) -> tuple[np.ndarray, np.ndarray]:
    return np.full(shape, c[0]), np.full(shape, c[1])


def _phi_cdf(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Φ over [lo, hi] (increasing): ½(1 + erf(x/√2))."""
    t_lo, _ = R.mul(lo, lo, *_const(_INV_SQRT2, lo.shape))
    _, t_hi = R.mul(hi, hi, *_const(_INV_SQRT2, hi.shape))
    e_lo, e_hi = R.erf_bounds(t_lo, t_hi)
    return R.down(0.5 * R.down(1.0 + e_lo)), R.up(0.5 * R.up(1.0 + e_hi))


def _sq(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x² over [lo, hi]."""
    a, b = np.abs(lo), np.abs(hi)
    straddle = (lo <= 0) & (hi >= 0)
    low = np.where(straddle, 0.0, R.down(np.minimum(a, b) ** 2))
    return np.maximum(low, 0.0), R.up(np.maximum(a, b) ** 2)


def _phi_pdf(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """φ over [lo, hi]: e^{−x²/2}/√(2π)."""
    s_lo, s_hi = _sq(lo, hi)
    e_lo, e_hi = R.exp_le0_bounds(-0.5 * s_hi, -0.5 * s_lo)
    return R.mul(e_lo, e_hi, *_const(_INV_SQRT2PI, lo.shape))


def _tanh_lower(u: np.ndarray) -> np.ndarray:
    """A lower bound of tanh(u) at exact points u: tanh|u| = (1 − e^{−2|u|})/(1 + e^{−2|u|})."""
    a = np.abs(u)
    e_lo, e_hi = R.exp_le0_bounds(-2.0 * a, -2.0 * a)
    pos_lower = R.down(R.down(1.0 - e_hi) / R.up(1.0 + e_hi))
    neg_lower = -R.up(R.up(1.0 - e_lo) / R.down(1.0 + e_lo))  # −(upper bound of tanh|u|)
    return np.where(u >= 0, np.maximum(pos_lower, 0.0), np.maximum(neg_lower, -1.0))


def _tanh_upper(u: np.ndarray) -> np.ndarray:
    return -_tanh_lower(-u)


def _u(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """u(x) = √(2/π)(x + c x³) over [lo, hi] (increasing in x)."""
    cube_lo, cube_hi = R.mul(*_sq(lo, hi), lo, hi)
    inner = R.add(lo, hi, *R.mul(cube_lo, cube_hi, *_const(_C, lo.shape)))
    return R.mul(*inner, *_const(_K, lo.shape))


def _tanh_range(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tanh(u(x)) over [lo, hi]."""
    u_lo, _ = _u(lo, lo)
    _, u_hi = _u(hi, hi)
    return _tanh_lower(u_lo), _tanh_upper(u_hi)


def sigmoid_points(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ(x) at exact points x, enclosed (module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    a = -np.abs(x)  # e^{−|x|} ∈ [e_lo, e_hi]
    e_lo, e_hi = R.exp_le0_bounds(a, a)
    # x ≥ 0: 1/(1 + e) is decreasing in e; x < 0: e/(1 + e) is increasing in e
    pos = R.down(1.0 / R.up(1.0 + e_hi)), R.up(1.0 / R.down(1.0 + e_lo))
    neg = R.down(e_lo / R.up(1.0 + e_lo)), R.up(e_hi / R.down(1.0 + e_hi))
    lo = np.where(x >= 0, pos[0], neg[0])
    hi = np.where(x >= 0, pos[1], neg[1])
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _sigmoid_range(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ over [lo, hi] (increasing)."""
    return sigmoid_points(lo)[0], sigmoid_points(hi)[1]


def _value(act: Activation, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """act(x) at exact points x, enclosed."""
    if act is Activation.SILU:
        return R.mul(x, x, *sigmoid_points(x))
    if act is Activation.GELU:
        p_lo, p_hi = _phi_cdf(x, x)
    else:
        t_lo, t_hi = _tanh_range(x, x)
        p_lo, p_hi = R.down(0.5 * R.down(1.0 + t_lo)), R.up(0.5 * R.up(1.0 + t_hi))
    return R.mul(x, x, p_lo, p_hi)


def act_range(act: Activation, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of act over each interval [lo, hi] (module docstring)."""
    if act is Activation.RELU:
        return np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    a_lo, a_hi = _value(act, lo)
    b_lo, b_hi = _value(act, hi)
    upper = np.maximum(a_hi, b_hi)
    if act is Activation.SILU:
        x_lo, x_hi, a_min = SILU_X_STAR_LO, SILU_X_STAR_HI, SILU_MIN
    else:
        x_lo, x_hi, a_min = X_STAR_LO, X_STAR_HI, ACT_MIN
    lower = np.where(hi <= x_lo, b_lo, np.where(lo >= x_hi, a_lo, a_min))
    return np.minimum(lower, upper), upper


def act_slope(act: Activation, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """An upper bound of sup |act′(x)| over each interval [lo, hi]."""
    s_lo, s_hi = act_slope_range(act, lo, hi)
    cap = SILU_SLOPE_MAX if act is Activation.SILU else SLOPE_MAX
    return np.minimum(np.maximum(np.abs(s_lo), np.abs(s_hi)), cap)


def act_value(act: Activation, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """act(x) at exact points x, enclosed."""
    if act is Activation.RELU:
        return np.maximum(x, 0.0), np.maximum(x, 0.0)
    return _value(act, x)


def act_slope_range(act: Activation, lo: np.ndarray, hi: np.ndarray):
    """An enclosure [s_lo, s_hi] of act′ over each interval [lo, hi] (ReLU: its Clarke
    derivative: 0 below 0, 1 above, [0, 1] across)."""
    if act is Activation.RELU:
        return np.where(lo >= 0, 1.0, 0.0), np.where(hi <= 0, 0.0, 1.0)
    if act is Activation.SILU:  # σ(x)·(1 + x(1 − σ(x)))
        g_lo, g_hi = _sigmoid_range(lo, hi)
        one_minus = R.down(1.0 - g_hi), R.up(1.0 - g_lo)
        h_lo, h_hi = R.add(1.0, 1.0, *R.mul(lo, hi, *one_minus))
        s_lo, s_hi = R.mul(g_lo, g_hi, h_lo, h_hi)
        return np.maximum(s_lo, SILU_SLOPE_MIN), np.minimum(s_hi, SILU_SLOPE_MAX)
    if act is Activation.GELU:
        c_lo, c_hi = _phi_cdf(lo, hi)
        p_lo, p_hi = _phi_pdf(lo, hi)
        x_lo, x_hi = R.mul(lo, hi, p_lo, p_hi)
        s_lo, s_hi = R.add(c_lo, c_hi, x_lo, x_hi)
    else:
        t_lo, t_hi = _tanh_range(lo, hi)
        half = (R.down(0.5 * R.down(1.0 + t_lo)), R.up(0.5 * R.up(1.0 + t_hi)))
        t2_lo, t2_hi = _sq(t_lo, t_hi)
        sech = (np.maximum(R.down(1.0 - t2_hi), 0.0), R.up(1.0 - t2_lo))
        x2 = _sq(lo, hi)
        du = R.mul(*R.add(1.0, 1.0, *R.mul(*x2, *_const(_C3, lo.shape))), *_const(_K, lo.shape))
        second = R.mul(*R.mul(lo, hi, *sech), *du)
        second = (R.down(0.5 * second[0]), R.up(0.5 * second[1]))
        s_lo, s_hi = R.add(*half, *second)
    return np.maximum(s_lo, SLOPE_MIN), np.minimum(s_hi, SLOPE_MAX)
