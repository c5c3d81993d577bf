"""The first layer's exact worst cases: a fractional program per query and coordinate.

In layer 1 every position's token is chosen independently (from its allowed symbols),
so for a query j whose own token is σ, coordinate c of the head's average

    o_j[c] = Σ_w e^{s_w(x_w)} ṽ_w(x_w)[c] / Σ_w e^{s_w(x_w)}

is a ratio of sums of independent terms, and its maximum over all completions is the
root λ* of the decreasing function F(λ) = Σ_w max_τ e^{s_w(τ)}(ṽ_w(τ)[c] − λ)
(guide, "First layer, exactly"). :func:`first_layer_range` finds λ* by Dinkelbach's
iteration in floats (untrusted: x ← argmax per position, λ ← ratio at x), then
*certifies* an upper bound λ⁺ ≥ λ* by checking F⁺(λ⁺) ≤ 0 in outward-rounded
arithmetic, F⁺ built from enclosures of e^s and ṽ: if F(λ⁺) ≤ 0 then
Σ e^s (ṽ − λ⁺) ≤ 0 for every completion, i.e. every ratio is ≤ λ⁺. The minimum is the
same program for −ṽ. A query's own key carries the query's token.

Keys whose option rows coincide (same allowed symbols, same key and value boxes — e.g.
no position-dependent features) are grouped and counted once per group (unmasked
heads): the cost per query is O(#groups · |Σ| · d) per iteration instead of O(n · |Σ| · d).
"""

from __future__ import annotations

import numpy as np

from attncert.model.spec import Mask
from attncert.soft.certified import rigorous as R

_MAX_ITER = 60
_MARGINS = (2.0**-44, 2.0**-36, 2.0**-28, 2.0**-20, 2.0**-10)
_BISECT = 24


def _dinkelbach(e: np.ndarray, v: np.ndarray, val: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Float Dinkelbach: λ* (C,) of max Σ_w cnt_w e_w(τ) v_w(τ) / Σ_w cnt_w e_w(τ) with
    weights e (W, K), values v (W, K, C), valid options val (W, K)."""
    vm = np.where(val[..., None], v, -np.inf)
    choice = vm.argmax(axis=1)  # (W, C): start from the largest value everywhere
    lam = np.full(v.shape[-1], -np.inf)
    w_idx = np.arange(v.shape[0])[:, None]
    c_idx = np.arange(v.shape[-1])[None, :]
    for _ in range(_MAX_ITER):
        e_sel = e[w_idx, choice] * cnt[:, None]  # (W, C)
        v_sel = v[w_idx, choice, c_idx]
        new = (e_sel * v_sel).sum(axis=0) / e_sel.sum(axis=0)
        if np.all(new <= lam):
            break
        lam = np.maximum(lam, new)
        score = np.where(val[..., None], e[..., None] * (v - lam), -np.inf)
        choice = score.argmax(axis=1)
    return lam


def _f_upper(e_lo, e_hi, v_hi, val, cnt, lam) -> np.ndarray:
    """F⁺(λ) (C,): an upper bound of Σ_w cnt_w max_τ e_w(τ)(ṽ_w(τ) − λ) for every e, ṽ in
    their enclosures (a term e·(v − λ) is largest at e_hi when v − λ ≥ 0, else at e_lo)."""
    a = R.up(v_hi - lam)  # (W, K, C)
    term = np.where(a >= 0, R.up(e_hi[..., None] * a), R.up(e_lo[..., None] * a))
    term = np.where(val[..., None], term, -np.inf).max(axis=1)  # (W, C)
    return R.sum_upper(R.up(term * cnt[:, None]).T)


def _certify(e_lo, e_hi, v_hi, val, cnt, lam) -> np.ndarray:
    """λ⁺ ≥ λ (C,) with F⁺(λ⁺) ≤ 0 checked; NaN where it could not be certified.

    F⁺ is convex and decreasing with slope ≤ −S, S = Σ_w cnt_w min_τ e_lo,w(τ) (each
    term's slope is −e of the option it selects), so one Newton step
    λ⁺ = λ + F⁺(λ)/S lands where F⁺ ≤ 0 in exact arithmetic; a few small margins absorb
    the rounding of the check itself; bisection between λ and λ⁺ then finds the root of
    F⁺ to 2⁻²⁴ of the bracket (every accepted point is checked)."""
    s_min = R.sum_down(np.where(val, e_lo, np.inf).min(axis=1) * cnt)
    f = _f_upper(e_lo, e_hi, v_hi, val, cnt, lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(f > 0, R.up(f / s_min), 0.0)
    base = R.up(lam + step)
    out = np.full(lam.shape, np.nan)
    for margin in _MARGINS:
        cand = R.up(base + margin * np.maximum(1.0, np.abs(base)))
        ok = np.isfinite(cand) & (_f_upper(e_lo, e_hi, v_hi, val, cnt, cand) <= 0)
        out = np.where(np.isnan(out) & ok, cand, out)
        if not np.any(np.isnan(out)):
            break
    # bisect down to the root of F⁺ (24 halvings of the bracket): the bound then depends on
    # the enclosures, not on where Dinkelbach stopped
    lo = np.where(f <= 0, out, lam)
    hi = np.where(np.isnan(out), np.nan, out)
    for _ in range(_BISECT):
        mid = 0.5 * lo + 0.5 * hi
        ok = _f_upper(e_lo, e_hi, v_hi, val, cnt, mid) <= 0
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return hi


def _ratio_max(e_lo, e_hi, v_lo, v_hi, val, cnt) -> np.ndarray:
    lam = _dinkelbach(0.5 * (e_lo + e_hi), 0.5 * (v_lo + v_hi), val, cnt)
    return _certify(e_lo, e_hi, v_hi, val, cnt, lam)


def key_groups(k_opt, v_opt, valid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(representative positions, counts, group index of every position) of the keys
    whose option rows coincide exactly."""
    n = valid.shape[0]
    sig = np.concatenate(
        [a.reshape(n, -1) for a in (*k_opt, *v_opt)] + [valid.astype(float)], axis=1
    )
    _, rep, inverse, counts = np.unique(
        sig, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return rep, counts, inverse.reshape(n)


def first_layer_range(q_opt, k_opt, v_opt, valid, beta, mask: Mask, queries) -> tuple:
    """Certified [min, max] (len(queries), K, C) of Σ_w a_jw ṽ_w over all completions, for
    each query token position in ``queries`` and each of its allowed tokens (the head's
    bias is added by the caller).

    ``q_opt``, ``k_opt``, ``v_opt``: boxes (N, K, ·) of the query, key and value of
    position t carrying its k-th allowed token; ``valid`` (N, K) marks real options.
    Entries that could not be certified are ±inf (the caller intersects with its other
    bounds); queries that see no key, and tokens a position may not carry, get
    [+inf, −inf] (the caller keeps its own box there)."""
    n, kk = valid.shape
    c = v_opt[0].shape[-1]
    vis = mask.matrix(n)
    lo_out = np.full((len(queries), kk, c), np.inf)
    hi_out = np.full((len(queries), kk, c), -np.inf)
    grouped = mask is Mask.NONE
    if grouped:
        rep, counts, group_of = key_groups(k_opt, v_opt, valid)
    for row, j in enumerate(queries):
        if grouped:
            cnt = counts.astype(float)
            cnt[group_of[j]] -= 1
            keys = np.concatenate([rep[cnt > 0], [j]])
            cnt = np.concatenate([cnt[cnt > 0], [1.0]])
        else:
            keys = np.nonzero(vis[j])[0]
            cnt = np.ones(len(keys))
        if len(keys) == 0:
            continue
        own = np.nonzero(keys == j)[0]
        dk = k_opt[0].shape[-1]
        s_lo, s_hi = R.dot_boxes(
            q_opt[0][j], q_opt[1][j], k_opt[0][keys].reshape(-1, dk), k_opt[1][keys].reshape(-1, dk)
        )
        s_lo, s_hi = R.mul(s_lo, s_hi, np.float64(beta[0]), np.float64(beta[1]))
        s_lo, s_hi = s_lo.reshape(kk, len(keys), kk), s_hi.reshape(kk, len(keys), kk)
        v_lo, v_hi = v_opt[0][keys], v_opt[1][keys]
        for qi in range(kk):
            if not valid[j, qi]:
                continue
            val = valid[keys].copy()
            if len(own):  # the query's own key carries the query's token
                val[own[0]] = np.arange(kk) == qi
            m = np.where(val, s_hi[qi], -np.inf).max()
            a = np.where(val, np.minimum(R.down(s_lo[qi] - m), 0.0), 0.0)
            b = np.where(val, np.minimum(R.up(s_hi[qi] - m), 0.0), 0.0)
            e_lo = R.exp_le0_bounds(a, a)[0]
            e_hi = R.exp_le0_bounds(b, b)[1]
            up_b = _ratio_max(e_lo, e_hi, v_lo, v_hi, val, cnt)
            dn_b = -_ratio_max(e_lo, e_hi, -v_hi, -v_lo, val, cnt)
            hi_out[row, qi] = np.where(np.isnan(up_b), np.inf, up_b)
            lo_out[row, qi] = np.where(np.isnan(dn_b), -np.inf, dn_b)
    return lo_out, hi_out
